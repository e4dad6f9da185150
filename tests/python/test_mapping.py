"""Ray Tune's vocabulary to space.json: every name tune.run accepts gives the file that
docs/python.md describes, and the real `tune validate` accepts each generated file; the
names tune does not support fail in Python with a message naming what is supported."""

import os
import unittest

from helpers import Case, tune, tune_accepts
import trainables

CMD = ["python3", "train.py", "--seed", "{trial_id}"]


def space_of(config, **kw):
    # {x} in the command when there is an x: a placeholder must name a parameter.
    cmd = CMD + (["--x", "{x}"] if "x" in (config or {}) else [])
    return tune.build_space(cmd, config, name="m", **kw)


class Distributions(Case):
    def check(self, dist, expected):
        s = space_of({"x": dist})
        self.assertEqual(s["space"]["x"], expected)
        out = self.assertValid(s)
        self.assertIn('experiment "m"', out)

    def test_uniform(self):
        self.check(tune.uniform(-1, 2.5), {"uniform": [-1, 2.5]})

    def test_quniform(self):
        self.check(tune.quniform(0, 1, 0.25), {"quniform": [0, 1, 0.25]})

    def test_loguniform(self):
        self.check(tune.loguniform(1e-4, 1e-1), {"loguniform": [1e-4, 1e-1]})

    def test_loguniform_base(self):
        self.check(tune.loguniform(1, 1024, base=2), {"loguniform": [1, 1024, 2]})

    def test_qloguniform(self):
        self.check(tune.qloguniform(1, 100, 5), {"qloguniform": [1, 100, 5]})
        self.check(tune.qloguniform(1, 100, 5, 2), {"qloguniform": [1, 100, 5, 2]})

    def test_randn(self):
        self.check(tune.randn(), {"randn": [0.0, 1.0]})
        self.check(tune.randn(5, 2), {"randn": [5, 2]})

    def test_qrandn(self):
        self.check(tune.qrandn(0, 1, 0.1), {"qrandn": [0, 1, 0.1]})

    def test_randint(self):
        self.check(tune.randint(1, 10), {"randint": [1, 10]})

    def test_qrandint(self):
        self.check(tune.qrandint(2, 10, 2), {"qrandint": [2, 10, 2]})
        self.check(tune.qrandint(0, 5), {"qrandint": [0, 5, 1]})

    def test_lograndint(self):
        self.check(tune.lograndint(1, 1000), {"lograndint": [1, 1000]})

    def test_qlograndint(self):
        self.check(tune.qlograndint(1, 1000, 10), {"qlograndint": [1, 1000, 10]})

    def test_choice(self):
        self.check(tune.choice([16, "adam", None, [1, 2], {"a": 1}]),
                   {"choice": [16, "adam", None, [1, 2], {"a": 1}]})

    def test_grid_search(self):
        self.check(tune.grid_search([1, 2, 3]), {"grid_search": [1, 2, 3]})
        # Ray's grid_search is the dict {"grid_search": [...]}; written by hand it works too.
        self.check({"grid_search": ["a", "b"]}, {"grid_search": ["a", "b"]})

    def test_constants_and_order(self):
        s = space_of({"z": 1, "a": tune.uniform(0, 1), "s": "text", "l": (1, 2), "n": None})
        self.assertEqual(list(s["space"]), ["z", "a", "s", "l", "n"])  # the order fixes the streams
        self.assertEqual(s["space"]["l"], [1, 2])
        out = self.assertValid(s)
        self.assertIn('"s":"text"', out)


class RunArguments(Case):
    def test_experiment_keys(self):
        s = tune.build_space(CMD, {"x": tune.uniform(0, 1)}, name="exp.1", metric="val_loss",
                             mode="max", num_samples=7, max_concurrent_trials=3, seed=42,
                             resources_per_trial={"cpu": 2, "gpu": 0.5}, max_failures=2,
                             stop_grace_s=1.5, status_interval_s=10, result_timeout_s=60,
                             executor="local")
        self.assertEqual(s, {
            "name": "exp.1", "metric": "val_loss", "mode": "max", "num_samples": 7,
            "max_concurrent": 3, "seed": 42, "command": CMD,
            "resources": {"gpus_per_trial": 0.5, "cpus_per_trial": 2},
            "executor": {"type": "local"}, "stop_grace_s": 1.5, "status_interval_s": 10,
            "result_timeout_s": 60, "max_failures": 2, "space": {"x": {"uniform": [0, 1]}}})
        self.assertIn("7 trials", self.assertValid(s))

    def test_mode_is_written_only_when_given(self):
        # The engine's default (min for a loss) applies, and the engine refuses what has no
        # default (a scheduler, or an accuracy, without a mode): test_judge.py.
        s = tune.build_space(CMD, {"x": 1}, name="m", metric="loss")
        self.assertEqual(s["metric"], "loss")
        self.assertNotIn("mode", s)
        self.assertValid(s)

    def test_default_name_is_the_function_and_a_time(self):
        s = tune.build_space(trainables.quadratic, {"x": 1})
        self.assertRegex(s["name"], r"^quadratic_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d$")
        self.assertValid(s)

    def test_asha(self):
        sched = tune.ASHAScheduler(time_attr="epoch", max_t=27, grace_period=1,
                                   reduction_factor=3, brackets=2)
        s = space_of({"x": 1}, metric="loss", mode="min", scheduler=sched)
        self.assertEqual(s["scheduler"], {"type": "asha", "time_attr": "epoch", "max_t": 27,
                                          "grace_period": 1, "reduction_factor": 3,
                                          "brackets": 2})
        self.assertValid(s)
        # Left-out arguments stay out of the file: tune's defaults (Ray's) apply.
        self.assertEqual(space_of({}, metric="l", scheduler=tune.ASHAScheduler())["scheduler"],
                         {"type": "asha"})
        self.assertIs(tune.AsyncHyperBandScheduler, tune.ASHAScheduler)

    def test_hyperband(self):
        sched = tune.HyperBandScheduler(time_attr="epoch", max_t=27, reduction_factor=3,
                                        stop_last_trials=False)
        s = space_of({"x": 1}, metric="loss", mode="min", scheduler=sched)
        self.assertEqual(s["scheduler"], {"type": "hyperband", "time_attr": "epoch",
                                          "max_t": 27, "reduction_factor": 3,
                                          "stop_last_trials": False})
        self.assertValid(s)
        self.assertEqual(space_of({}, metric="l", scheduler="hyperband")["scheduler"],
                         {"type": "hyperband"})

    def test_pbt(self):
        sched = tune.PopulationBasedTraining(
            time_attr="training_iteration", metric="loss", mode="min", perturbation_interval=4,
            quantile_fraction=0.25, resample_probability=0.5, perturbation_factors=(1.2, 0.8),
            hyperparam_mutations={"lr": tune.loguniform(1e-4, 1e-1), "batch": [32, 64]})
        s = space_of({"lr": tune.loguniform(1e-4, 1e-1), "batch": tune.choice([32, 64])},
                     scheduler=sched)
        self.assertEqual(s["scheduler"], {
            "type": "pbt", "time_attr": "training_iteration", "perturbation_interval": 4,
            "quantile_fraction": 0.25, "resample_probability": 0.5,
            "perturbation_factors": [1.2, 0.8],
            "hyperparam_mutations": {"lr": {"loguniform": [1e-4, 1e-1]}, "batch": [32, 64]}})
        self.assertEqual((s["metric"], s["mode"]), ("loss", "min"))
        self.assertValid(s)
        self.assertEqual(space_of({}, metric="l", mode="max", scheduler="pbt")["scheduler"],
                         {"type": "pbt"})

    def test_scheduler_metric_and_mode(self):
        s = space_of({}, scheduler=tune.ASHAScheduler(metric="acc", mode="max", max_t=9))
        self.assertEqual((s["metric"], s["mode"]), ("acc", "max"))
        self.assertValid(s)
        with self.assertRaisesRegex(ValueError, "scheduler says metric='acc'"):
            space_of({}, metric="loss", scheduler=tune.ASHAScheduler(metric="acc"))

    def test_median(self):
        sched = tune.MedianStoppingRule(time_attr="training_iteration", grace_period=2,
                                        min_samples_required=4)
        s = space_of({}, metric="loss", mode="min", scheduler=sched)
        self.assertEqual(s["scheduler"], {"type": "median", "time_attr": "training_iteration",
                                          "grace_period": 2, "min_samples_required": 4})
        self.assertValid(s)

    def test_fifo_and_scheduler_strings(self):
        self.assertEqual(space_of({}, scheduler=tune.FIFOScheduler())["scheduler"],
                         {"type": "fifo"})
        self.assertValid(space_of({}, scheduler=tune.FIFOScheduler()))
        self.assertEqual(space_of({}, metric="l", scheduler="asha")["scheduler"], {"type": "asha"})
        self.assertEqual(space_of({}, metric="l", scheduler="median")["scheduler"],
                         {"type": "median"})

    def test_search_alg_random_is_the_default(self):
        self.assertEqual(space_of({}, search_alg="random"), space_of({}))

    def test_search_alg_tpe_and_points_to_evaluate(self):
        cfg = {"x": tune.loguniform(1e-4, 1)}
        s = space_of(cfg, metric="l", mode="min", scheduler="asha", search_alg="tpe",
                     points_to_evaluate=[{"x": 0.01}, {"x": 0.5}])
        self.assertEqual(s["search"], {"type": "tpe"})
        self.assertEqual(s["points_to_evaluate"], [{"x": 0.01}, {"x": 0.5}])
        s["num_samples"] = 4
        self.assertValid(s)
        self.assertEqual(space_of(cfg, search_alg="bohb")["search"],
                         {"type": "tpe", "preset": "bohb"})
        self.assertEqual(space_of(cfg, search_alg={"type": "tpe", "preset": "optuna"})["search"],
                         {"type": "tpe", "preset": "optuna"})
        # TuneConfig spells the same
        t = tune.Tuner(CMD + ["--x", "{x}"], param_space=cfg,
                       tune_config=tune.TuneConfig(search_alg="tpe",
                                                   points_to_evaluate=[{"x": 0.1}]))
        self.assertEqual(t.kwargs["search_alg"], "tpe")
        self.assertEqual(t.kwargs["points_to_evaluate"], [{"x": 0.1}])

    def test_bad_point_is_tunes_located_error(self):
        s = space_of({"x": tune.uniform(0, 1)}, points_to_evaluate=[{"x": 2}])
        rc, out = self.validate(s)
        self.assertNotEqual(rc, 0)
        self.assertIn("points_to_evaluate[0].x: 2 is outside uniform [0, 1]", out)

    def test_function_trainable_command(self):
        s = tune.build_space(trainables.quadratic, {"x": 1}, name="f")
        here = os.path.dirname(os.path.abspath(trainables.__file__))
        self.assertEqual(s["command"][1:], ["-m", "tune.trial", "trainables:quadratic",
                                            "--path", here])
        self.assertTrue(os.path.isabs(s["command"][0]))
        self.assertValid(s)

    def test_placeholder_braces_in_paths_are_escaped(self):
        from tune._run import _escape
        self.assertEqual(_escape("/a/{b}/c.py:f"), "/a/{{b}}/c.py:f")


class NewKeys(Case):
    """Keys another change adds to the engine: the mapping always, `tune validate` once the
    engine knows the key (skipped before)."""

    SPACE = dict(stop={"val_accuracy": 0.95, "training_iteration": 50},
                 stop_experiment_on_target=True, time_budget_s=3600, trial_time_limit_s=600,
                 fail_fast=3, allow_missing_metric=False,
                 progress_reporter=tune.CLIReporter(metric_columns=["val_accuracy"],
                                                    parameter_columns={"lr": "LR"}),
                 scheduler=tune.ASHAScheduler(max_t=9, stop_last_trials=False))

    def test_mapping(self):
        s = space_of({"lr": 0.1}, metric="loss", **self.SPACE)
        for key, value in (("stop", {"val_accuracy": 0.95, "training_iteration": 50}),
                           ("stop_experiment_on_target", True), ("time_budget_s", 3600),
                           ("trial_time_limit_s", 600), ("fail_fast", 3),
                           ("allow_missing_metric", False),
                           ("reporter", {"metric_columns": ["val_accuracy"],
                                         "parameter_columns": ["lr"]})):
            self.assertEqual(s[key], value, key)
        self.assertEqual(s["scheduler"], {"type": "asha", "max_t": 9, "stop_last_trials": False})
        self.assertEqual(space_of({}, fail_fast=True)["fail_fast"], True)

    def validates(self, key, value, **kw):
        if not tune_accepts(key, value, scheduler=kw.pop("scheduler_key", False)):
            self.skipTest(f"this tune does not know {key!r} yet")
        self.assertValid(space_of({"lr": 0.1}, metric="loss", mode="min", **kw))

    def test_stop_validates(self):
        self.validates("stop", {"acc": 1}, stop={"acc": 0.9, "training_iteration": 5})

    def test_stop_experiment_on_target_validates(self):
        self.validates("stop_experiment_on_target", True, stop={"acc": 0.9},
                       stop_experiment_on_target=True)

    def test_time_budget_s_validates(self):
        self.validates("time_budget_s", 10, time_budget_s=3600)

    def test_trial_time_limit_s_validates(self):
        self.validates("trial_time_limit_s", 10, trial_time_limit_s=600)

    def test_fail_fast_validates(self):
        self.validates("fail_fast", 3, fail_fast=3)

    def test_reporter_validates(self):
        self.validates("reporter", {"metric_columns": ["m"]},
                       progress_reporter=tune.CLIReporter(metric_columns=["acc"],
                                                          parameter_columns=["lr"]))

    def test_allow_missing_metric_validates(self):
        self.validates("allow_missing_metric", True, allow_missing_metric=True)

    def test_stop_last_trials_validates(self):
        self.validates("stop_last_trials", False, scheduler_key=True,
                       scheduler=tune.ASHAScheduler(max_t=9, stop_last_trials=False))


class Refusals(Case):
    """What tune does not support fails before anything runs, naming what is supported."""

    def test_unsupported_search_and_schedulers(self):
        with self.assertRaisesRegex(ValueError, r"search_alg='hyperopt' is not supported: use "
                                                "'random'.*'tpe'"):
            space_of({}, search_alg="hyperopt")
        with self.assertRaisesRegex(ValueError, r"search_alg='OptunaSearch' is not supported"):
            space_of({}, search_alg=type("OptunaSearch", (), {})())
        with self.assertRaisesRegex(ValueError, "custom_explore_fn is not supported"):
            tune.PopulationBasedTraining(custom_explore_fn=lambda c: c)
        with self.assertRaisesRegex(ValueError, "synch=True is not supported"):
            tune.PopulationBasedTraining(synch=True)
        with self.assertRaisesRegex(ValueError, "is a function, which tune cannot call"):
            tune.PopulationBasedTraining(hyperparam_mutations={"lr": lambda: 0.1})
        with self.assertRaisesRegex(ValueError, "ASHAScheduler"):
            space_of({}, scheduler="pb2")
        with self.assertRaisesRegex(ValueError, "min_time_slice is not supported"):
            tune.MedianStoppingRule(min_time_slice=10)
        with self.assertRaisesRegex(ValueError, "sample_from is not supported"):
            space_of({"x": lambda spec: 1})

    def test_unsupported_run_arguments(self):
        with self.assertRaisesRegex(TypeError, r"'num_sample'.*did you mean 'num_samples'"):
            tune.run(CMD, num_sample=3)
        with self.assertRaisesRegex(TypeError, "'local_dir' is not supported: pass storage="):
            tune.run(CMD, local_dir="/tmp")
        with self.assertRaisesRegex(TypeError, "'checkpoint_config' is not supported"):
            tune.run(CMD, checkpoint_config=object())
        with self.assertRaisesRegex(ValueError, "resources_per_trial: 'tpu' is not supported"):
            space_of({}, resources_per_trial={"tpu": 1})
        with self.assertRaisesRegex(TypeError, "stop must be a dict"):
            space_of({}, stop=lambda trial_id, result: False)

    def test_unsupported_trainables_and_configs(self):
        with self.assertRaisesRegex(ValueError, "lambda"):
            tune.build_space(lambda c: None, {})
        def local(config):
            pass
        with self.assertRaisesRegex(ValueError, "inside another function"):
            tune.build_space(local, {})
        with self.assertRaisesRegex(TypeError, "class trainables are not supported"):
            tune.build_space(type("T", (), {"__call__": lambda self: 0}), {})
        with self.assertRaisesRegex(TypeError, "never run through a shell"):
            tune.build_space("python train.py", {})
        with self.assertRaisesRegex(TypeError, "not a JSON value"):
            space_of({"x": object()})


if __name__ == "__main__":
    unittest.main()
