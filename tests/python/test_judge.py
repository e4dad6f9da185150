"""The engine judges, Python translates (issue 28): a metric without a mode is never
minimised in silence, whatever the engine accepts is reachable from Python, whatever it
refuses Python refuses with its words and the argument named, and re-running a script
(resume='AUTO', restart=True, after a metric typo) does what the user means."""

import json
import os
import unittest
from unittest import mock

from helpers import Case, tune
import trainables
from tune import _run


def nested(config):
    """Reports what a nested and a conditional space gave it."""
    opt = config["opt"]
    tune.report(loss=config["model"]["width"] + opt.get("momentum", 0) + opt.get("beta1", 0),
                width=config["model"]["width"], act=config["model"]["act"],
                opt_name=opt["name"], momentum=opt.get("momentum", -1),
                beta1=opt.get("beta1", -1))


def flaky(config):
    """Fails before reporting anything while JUDGE_FAIL is set (tune passes its environment
    on to the trials), else reports once."""
    if os.environ.get("JUDGE_FAIL"):
        raise RuntimeError("not yet")
    tune.report(loss=config["x"])


def quick(**kw):
    """tune.run of trainables.quadratic in the test's folder, quietly."""
    kw.setdefault("config", {"x": tune.grid_search([0.1, 0.9])})
    return tune.run(trainables.quadratic, storage="tune.db", verbose=0, **kw)


class Mode(Case):
    """Silent wrong result 1: a metric without a mode was minimised."""

    def test_asha_without_mode_raises(self):
        # On main this ran with "mode": "min": ASHA kept the trial of the lowest accuracy
        # and stopped the others (quadratic reports acc = 1 - x/i).
        with self.assertRaises(ValueError) as cm:
            quick(name="asha", metric="acc", max_concurrent_trials=1,
                  scheduler=tune.ASHAScheduler(max_t=5, grace_period=1, reduction_factor=2))
        e = cm.exception
        self.assertIsInstance(e, tune.SpaceError)  # exported, so a script can catch it
        self.assertIsInstance(e, tune.TuneError)
        self.assertEqual(e.exit_code, 2)
        self.assertIn('mode: required with the "asha" scheduler ("min" or "max")', str(e))
        self.assertIn("mode='max'", str(e))  # the Python remedy
        self.assertEqual(self.sql("SELECT count(*) FROM experiments")
                         if os.path.exists(self.db) else [(0,)], [(0,)])

    def test_every_scheduler_but_fifo_needs_a_mode(self):
        for sched in (tune.HyperBandScheduler(), tune.MedianStoppingRule(),
                      tune.PopulationBasedTraining(), tune.ASHAScheduler(metric="loss")):
            s = tune.build_space(trainables.quadratic, {"x": 1}, name="m", metric="loss",
                                 scheduler=sched)
            self.assertNotIn("mode", s)  # Python writes no default of its own
            with self.assertRaisesRegex(ValueError, f'mode: required with the "{sched.type}" '
                                                    'scheduler') as cm:
                quick(name=f"m{sched.type}", metric="loss", scheduler=sched)
            self.assertEqual(cm.exception.exit_code, 2)

    def test_fifo_accuracy_without_mode_raises_the_engines_words(self):
        # On main this ran and "best" was the trial with the lowest accuracy.
        with self.assertRaises(ValueError) as cm:
            quick(name="fifo", metric="acc")
        msg = str(cm.exception)
        self.assertTrue(msg.startswith("metric='acc': "), msg)
        self.assertIn('metric "acc" reads as higher-is-better, but "mode" is not given and '
                      'defaults to "min": add "mode": "max" (or "mode": "min" if smaller really '
                      'is better)', msg)
        self.assertRegex(msg, r"fifo\.space\.json:\d+:\d+: metric \"acc\"")
        # with a mode, it runs and ranks the right way
        a = quick(name="fifo", metric="acc", mode="max")
        self.assertEqual(a.best_config["x"], 0.1)  # acc = 1 - x/i: the smaller x is better

    def test_fifo_loss_without_mode_is_minimised(self):
        a = quick(name="loss", metric="loss")
        self.assertEqual(a.best_config["x"], 0.1)
        with open(a.space_path) as f:
            self.assertNotIn("mode", json.load(f))  # the engine's documented default


class Translation(Case):
    """Whatever the engine refuses, Python refuses with its words and the argument named."""

    def refusal(self, **kw):
        with self.assertRaises(ValueError) as cm:
            quick(name="bad", **kw)
        e = cm.exception
        self.assertIsInstance(e, tune.TuneError)
        self.assertEqual(e.exit_code, 2)
        return str(e)

    def test_refusals_name_the_python_argument(self):
        cases = [
            (dict(config={"lr": tune.loguniform(0, 1)}),
             "config['lr']: tune.loguniform(0, 1): \"loguniform\" needs low > 0"),
            (dict(config={"x": 1}, metric="loss", mode="min",
                  scheduler=tune.ASHAScheduler(grace_period=-1)),
             "tune.ASHAScheduler(grace_period=-1): \"grace_period\" must be a number > 0"),
            (dict(config={"opt": tune.choice([{"name": "sgd", "m": tune.uniform(2, 1)}])}),
             "config['opt'][choice value 0]['m']: tune.uniform(2, 1): \"uniform\" needs low "
             "< high"),
            (dict(config={"model": {"width": tune.randint(5, 1)}}),
             "config['model']['width']: tune.randint(5, 1): \"randint\" needs low < high"),
            (dict(config={"x": tune.quniform(0, 1, 0)}),
             "config['x']: tune.quniform(0, 1, 0): \"quniform\""),
            (dict(config={"x": tune.randn(0, 0)}), "config['x']: tune.randn(0, 0): "),
            (dict(config={"x": tune.choice([])}),
             "config['x']: tune.choice([]): \"choice\" needs at least one value"),
            (dict(config={"x": 1}, resources_per_trial={"gpu": 0.3}),
             "resources_per_trial['gpu'] = 0.3: \"gpus_per_trial\" must be 0, a whole number"),
            (dict(config={"x": 1}, num_samples=0),
             "num_samples=0: \"num_samples\" must be a positive integer"),
            (dict(config={"x": 1}, metric="loss", mode="minimize"),
             "mode='minimize': \"mode\" must be \"min\" or \"max\""),
            (dict(config={"x": 1}, metric="loss", mode="min",
                  scheduler=tune.PopulationBasedTraining(quantile_fraction=0.9)),
             "tune.PopulationBasedTraining(quantile_fraction=0.9): \"quantile_fraction\" must "
             "be a number between 0 and 0.5"),
            (dict(config={"v": [tune.uniform(0, 1)]}),
             "a distribution inside an array is not sampled"),
        ]
        for kw, want in cases:
            with self.subTest(want=want):
                self.assertIn(want, self.refusal(**kw))

    def test_the_line_named_is_the_argument_in_the_generated_file(self):
        msg = self.refusal(config={"a": 1, "lr": tune.loguniform(0, 1), "b": 2})
        first, second = msg.split("\n")
        path = os.path.join(self.dir, "bad.space.json")
        self.assertTrue(second.startswith(f"(tune: {path}:"), second)
        line = int(second[len(f"(tune: {path}:"):].split(":")[0])
        with open(path) as f:
            text = f.read()
        self.assertEqual(text, json.dumps(json.load(open(path)), indent=2) + "\n")
        self.assertIn("0,", text.splitlines()[line - 1])  # the low of loguniform [0, 1]

    def test_dump_space_records_each_lines_path(self):
        space = {"name": "n", "space": {"m": {"w": {"choice": [1, {"k": []}]}}, "e": {}}}
        text, paths = _run.dump_space(space)
        self.assertEqual(text, json.dumps(space, indent=2) + "\n")
        by_line = dict(zip(text.splitlines(), paths))
        self.assertEqual(by_line['            "k": []'], ("space", "m", "w", "choice", 1, "k"))
        self.assertEqual(by_line['        "choice": ['], ("space", "m", "w", "choice"))

    def test_what_json_cannot_carry_is_refused_in_python(self):
        # No tune process is started for these: a missing binary would say so first.
        with mock.patch.dict(os.environ, {"TUNE_BIN": os.path.join(self.dir, "none")}):
            with self.assertRaisesRegex(ValueError, r"config\['x'\]: nan cannot be written"):
                quick(name="j", config={"x": float("nan")})
            with self.assertRaisesRegex(TypeError, r"config\['m'\]\['o'\]: object .* is not "
                                                   "a JSON value"):
                quick(name="j", config={"m": {"o": object()}})
            with self.assertRaisesRegex(ValueError, "sample_from is not supported"):
                quick(name="j", config={"x": lambda spec: 1})
            with self.assertRaisesRegex(TypeError, "key 3 is not a string"):
                quick(name="j", config={3: 1})

    def test_constructors_judge_nothing(self):
        # The engine's rules are not kept twice: a constructor records the call.
        self.assertEqual(tune.uniform(2, 1).to_json(), {"uniform": [2, 1]})
        self.assertEqual(tune.loguniform(0, 1, base=1).to_json(), {"loguniform": [0, 1, 1]})
        self.assertEqual(tune.choice(("a", "b")).to_json(), {"choice": ["a", "b"]})
        self.assertEqual(tune.qrandint(0, 10).to_json(), {"qrandint": [0, 10, 1]})


class Reachable(Case):
    """Whatever the engine accepts is reachable from Python."""

    def test_nested_and_conditional_spaces_run(self):
        # On main: "nested dicts are not supported (a JSON object in space.json is a
        # distribution)", which was false.
        a = tune.run(nested, config={
            "model": {"width": tune.choice([64, 128]), "act": "relu"},
            "opt": tune.choice([{"name": "sgd", "momentum": tune.uniform(0.5, 0.99)},
                                {"name": "adam", "beta1": tune.uniform(0.8, 0.99)}])},
            metric="loss", mode="min", num_samples=4, seed=3, name="nest", storage="tune.db",
            verbose=0)
        trials = a.trials()
        self.assertEqual(len(trials), 4)
        for t in trials:
            c, r = t["config"], t["last_result"]
            self.assertIn(c["model"]["width"], (64, 128))
            self.assertEqual(r["width"], c["model"]["width"])
            self.assertEqual(r["act"], "relu")
            lo, hi, key = ((0.5, 0.99, "momentum") if c["opt"]["name"] == "sgd"
                           else (0.8, 0.99, "beta1"))
            self.assertTrue(lo <= c["opt"][key] <= hi, c)
            self.assertEqual(r[key], c["opt"][key])

    def test_scheduler_options_the_engine_has(self):
        # On main: hard_stop=False was refused, variant and max_t were unknown arguments.
        for sched, key, value in (
                (tune.MedianStoppingRule(hard_stop=False), "hard_stop", False),
                (tune.MedianStoppingRule(max_t=20), "max_t", 20),
                (tune.ASHAScheduler(variant="promotion"), "variant", "promotion"),
                (tune.PopulationBasedTraining(max_t=30), "max_t", 30),
                (tune.HyperBandScheduler(max_t=27, reduction_factor=3,
                                         stop_last_trials=False), "reduction_factor", 3)):
            with self.subTest(sched=sched):
                s = tune.build_space(["python3", "t.py", "--x", "{x}"], {"x": tune.uniform(0, 1)},
                                     name="s", metric="loss", mode="min", scheduler=sched)
                self.assertEqual(s["scheduler"][key], value)
                self.assertValid(s)

    def test_median_pause_runs(self):
        a = quick(name="pause", metric="loss", mode="min",
                  config={"x": tune.grid_search([0.1, 0.9, 0.2, 0.8])}, max_concurrent_trials=1,
                  scheduler=tune.MedianStoppingRule(hard_stop=False, grace_period=1,
                                                    min_samples_required=1),
                  raise_on_failed_trial=False)
        with open(a.space_path) as f:
            self.assertIs(json.load(f)["scheduler"]["hard_stop"], False)
        self.assertEqual(a.best_config["x"], 0.1)


class Rerun(Case):
    """Re-running a script is the edit-and-run loop."""

    def test_auto_returns_a_finished_experiments_analysis(self):
        quick(name="loop", metric="loss")
        runs = self.sql("SELECT count(*) FROM results")
        a = quick(name="loop", metric="loss", resume="AUTO")
        self.assertEqual(a.name, "loop")
        self.assertEqual(a.best_config["x"], 0.1)
        self.assertEqual(self.sql("SELECT count(*) FROM results"), runs)  # nothing ran again
        self.assertEqual(self.sql("SELECT name FROM experiments"), [("loop",)])

    def test_auto_starts_a_missing_one_and_resumes_an_interrupted_one(self):
        with mock.patch.dict(os.environ, {"JUDGE_FAIL": "1"}):
            with self.assertRaises(tune.TuneError) as cm:
                tune.run(flaky, config={"x": tune.grid_search([1, 2, 3])}, name="fl",
                         metric="loss", fail_fast=1, max_concurrent_trials=1,
                         storage="tune.db", verbose=0, resume="AUTO")
        self.assertIn("resume='AUTO'", str(cm.exception))
        self.assertEqual(self.sql("SELECT status FROM experiments"), [("INTERRUPTED",)])
        a = tune.run(flaky, config={"x": tune.grid_search([1, 2, 3])}, name="fl",
                     metric="loss", fail_fast=1, max_concurrent_trials=1, storage="tune.db",
                     verbose=0, resume="AUTO", raise_on_failed_trial=False)
        self.assertEqual(a.summary()["status"], "FINISHED")
        self.assertEqual([t["status"] for t in a.trials()], ["ERROR", "TERMINATED", "TERMINATED"])
        self.assertEqual(self.sql("SELECT name FROM experiments"), [("fl",)])

    def test_finished_without_resume_names_python_remedies(self):
        quick(name="twice", metric="loss")
        with self.assertRaises(tune.TuneError) as cm:
            quick(name="twice", metric="loss")
        msg = str(cm.exception)
        self.assertIn("resume='AUTO' returns its analysis", msg)
        self.assertIn("restart=True", msg)
        self.assertNotIn("--restart", msg)
        self.assertNotIn("--db", msg)
        a = quick(name="twice", metric="loss", restart=True)  # afresh
        self.assertEqual(a.name, "twice-2")
        self.assertEqual(len(a.trials()), 2)

    def test_rerun_after_a_metric_typo_works(self):
        with self.assertRaises(tune.TuneError) as cm:
            quick(name="typo", metric="los")
        # On main: 'experiment "typo" already exists ... did not finish'.
        a = quick(name="typo", metric="loss")
        self.assertEqual(a.name, "typo")
        self.assertEqual(a.summary()["status"], "FINISHED")
        self.assertEqual(a.best_config["x"], 0.1)
        self.assertEqual(self.sql("SELECT name, metric FROM experiments"), [("typo", "loss")])
        # and the first failure said so, the Python way
        msg = str(cm.exception)
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertIn('reports no "los"', msg)
        self.assertIn("Fix metric=", msg)
        self.assertIn("run the script again", msg)
        self.assertNotIn("space.json", msg)

    def test_an_interrupted_run_allowed_to_miss_its_metric_is_resumed_not_replaced(self):
        quick(name="allow", metric="los", allow_missing_metric=True)
        # as a Ctrl-C before any result carried the metric would leave it
        import sqlite3
        con = sqlite3.connect(self.db)
        with con:
            con.execute("UPDATE experiments SET status = 'INTERRUPTED'")
        con.close()
        stored = self.sql("SELECT id, created_at FROM experiments")
        results = self.sql("SELECT id, wall_time FROM results ORDER BY id")
        a = quick(name="allow", metric="los", allow_missing_metric=True, resume="AUTO")
        self.assertEqual(a.summary()["status"], "FINISHED")
        # the same experiment, its results kept (a replacement would have new times)
        self.assertEqual(self.sql("SELECT id, created_at FROM experiments"), stored)
        self.assertEqual(self.sql("SELECT id, wall_time FROM results ORDER BY id"), results)

    def test_unknown_resume_values_are_refused(self):
        with self.assertRaisesRegex(ValueError, "resume='ERRORED_ONLY' is not supported"):
            quick(name="r", metric="loss", resume="ERRORED_ONLY")
        with self.assertRaisesRegex(ValueError, "contradict"):
            quick(name="r", metric="loss", resume="AUTO", restart=True)


if __name__ == "__main__":
    unittest.main()
