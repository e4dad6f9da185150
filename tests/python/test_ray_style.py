"""The Ray Tune surface people type, under tune: Ray's module paths (tune.schedulers,
tune.search.*, `from tune import train`, tune.session, tune.air), tune.Checkpoint, the
analysis names (best_trial as a property, get_best_config, best_checkpoint,
trial_dataframes, Result.checkpoint), the loud errors where Ray raises (silent wrong
result 5 of issue 28), tune.with_parameters and functools.partial, and the Ray-style
scripts of examples/ray_style/ run to the same kind of answer as Ray's."""

import ast
import functools
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest
from contextlib import redirect_stdout
from unittest import mock

from helpers import BUILD, PYDIR, SOURCE, TUNE, Case, tune
import ray_trainables
import trainables

from tune import schedulers, search, session, train
from tune.search import BasicVariantGenerator, ConcurrencyLimiter, Repeater
from tune.search.bayesopt import BayesOptSearch
from tune.search.bohb import TuneBOHB
from tune.search.hyperopt import HyperOptSearch
from tune.search.optuna import OptunaSearch

EXAMPLES = os.path.join(SOURCE, "examples", "ray_style")
CMD = ["python3", "-c", "pass"]
XS = [0.4, 0.2, 0.8]  # trainables.quadratic: loss = x / i, acc = 1 - loss, i = 1..5


def space_of(config=None, **kw):
    return tune.build_space(CMD, config or {}, name="m", **kw)


class ModulePaths(Case):
    def test_schedulers_module_is_tunes_classes(self):
        self.assertIs(schedulers.ASHAScheduler, tune.ASHAScheduler)
        self.assertIs(schedulers.AsyncHyperBandScheduler, tune.ASHAScheduler)
        for name in ("HyperBandScheduler", "MedianStoppingRule", "PopulationBasedTraining",
                     "FIFOScheduler"):
            self.assertIs(getattr(schedulers, name), getattr(tune, name))
        hb = schedulers.HyperBandForBOHB(max_t=9, reduction_factor=3)
        self.assertEqual(hb.to_json(), {"type": "hyperband", "max_t": 9, "reduction_factor": 3})
        self.assertEqual(schedulers.create_scheduler("async_hyperband", max_t=5).to_json(),
                         {"type": "asha", "max_t": 5})
        with self.assertRaisesRegex(TypeError, r"PB2 is not supported.*PopulationBasedTraining"):
            schedulers.PB2(metric="loss", mode="min")
        with self.assertRaisesRegex(TypeError, "written in Python.*ASHAScheduler"):
            schedulers.TrialScheduler()

    def test_searchers_are_the_engines_tpe(self):
        s = space_of({"x": tune.uniform(0, 1)}, scheduler=tune.ASHAScheduler(max_t=5),
                     search_alg=OptunaSearch(metric="loss", mode="min", seed=3))
        self.assertEqual(s["search"], {"type": "tpe", "preset": "optuna"})
        self.assertEqual((s["metric"], s["mode"], s["seed"]), ("loss", "min", 3))
        self.assertValid(s)
        s = space_of({"x": tune.uniform(0, 1)}, metric="loss", mode="max",
                     search_alg=ConcurrencyLimiter(HyperOptSearch(
                         points_to_evaluate=[{"x": 0.5}]), max_concurrent=3))
        self.assertEqual(s["search"], {"type": "tpe", "preset": "optuna"})
        self.assertEqual((s["max_concurrent"], s["points_to_evaluate"]), (3, [{"x": 0.5}]))
        self.assertValid(s)
        s = space_of({"x": tune.uniform(0, 1)}, metric="loss", mode="min",
                     scheduler=schedulers.HyperBandForBOHB(max_t=9),
                     search_alg=TuneBOHB(max_concurrent=2))
        self.assertEqual(s["search"], {"type": "tpe", "preset": "bohb"})
        self.assertEqual(s["max_concurrent"], 2)
        self.assertValid(s)
        # Ray's default searcher is random search: no "search" key at all.
        s = space_of({"x": tune.uniform(0, 1)},
                     search_alg=BasicVariantGenerator(points_to_evaluate=[{"x": 0.1}],
                                                      max_concurrent=2, random_state=9))
        self.assertNotIn("search", s)
        self.assertEqual((s["points_to_evaluate"], s["max_concurrent"], s["seed"]),
                         ([{"x": 0.1}], 2, 9))
        self.assertValid(s)
        self.assertEqual(search.create_searcher("optuna", metric="l").to_json()["type"], "tpe")

    def test_searcher_and_run_must_agree(self):
        with self.assertRaisesRegex(ValueError, r"metric='acc' but the searcher OptunaSearch "
                                                r"says metric='loss'"):
            space_of(metric="acc", search_alg=OptunaSearch(metric="loss", mode="min"))
        with self.assertRaisesRegex(ValueError, "max_concurrent_trials=4 but the searcher"):
            space_of(max_concurrent_trials=4,
                     search_alg=ConcurrencyLimiter(OptunaSearch(), max_concurrent=2))
        # the same value in both places is fine
        self.assertEqual(space_of(metric="loss", mode="min",
                                  search_alg=OptunaSearch(metric="loss"))["metric"], "loss")

    def test_searchers_tune_has_not_are_refused_naming_tpe(self):
        with self.assertRaisesRegex(TypeError, r"BayesOptSearch is not supported \(it models "
                                               r"the objective with a Gaussian process.*TPE"):
            BayesOptSearch(metric="loss", mode="min")
        from tune.search.ax import AxSearch
        with self.assertRaisesRegex(TypeError, "AxSearch is not supported.*OptunaSearch"):
            AxSearch()
        with self.assertRaisesRegex(ValueError, r"sampler= is not supported: tune runs "
                                                r"Optuna's default sampler, TPE"):
            OptunaSearch(sampler=object())
        with self.assertRaisesRegex(ValueError, "space= is not supported.*config="):
            OptunaSearch(space={"x": None})
        with self.assertRaisesRegex(ValueError, "n_initial_points and gamma are HyperOpt's"):
            HyperOptSearch(gamma=0.5)
        with self.assertRaisesRegex(TypeError, r"Repeater is not supported.*report the mean"):
            Repeater(OptunaSearch(), repeat=3)
        with self.assertRaisesRegex(ValueError, "unknown searcher 'optna'.*did you mean 'optuna'"):
            search.create_searcher("optna")


class Checkpoints(Case):
    def test_checkpoint_object(self):
        d = os.path.join(self.dir, "ck")
        os.makedirs(d)
        with open(os.path.join(d, "model.txt"), "w") as f:
            f.write("w=3")
        ck = tune.Checkpoint.from_directory(d)
        self.assertIs(train.Checkpoint, tune.Checkpoint)
        self.assertEqual((ck.path, os.fspath(ck), str(ck)), (d, d, d))
        self.assertEqual(ck, d)  # the path it stands for, as tune.get_checkpoint() was
        self.assertIsInstance(ck, os.PathLike)
        with ck.as_directory() as got:
            with open(os.path.join(got, "model.txt")) as f:
                self.assertEqual(f.read(), "w=3")
        out = ck.to_directory(os.path.join(self.dir, "copy"))
        with open(os.path.join(out, "model.txt")) as f:
            self.assertEqual(f.read(), "w=3")
        with open(os.path.join(ck.to_directory(), "model.txt")) as f:  # a new temporary folder
            self.assertEqual(f.read(), "w=3")
        with self.assertRaisesRegex(FileNotFoundError, "is not a folder"):
            tune.Checkpoint.from_directory(os.path.join(self.dir, "nosuch"))
        with self.assertRaisesRegex(TypeError, "from_dict is not supported.*from_directory"):
            tune.Checkpoint.from_dict({"a": 1})
        # a checkpoint saved as one file (tune's own trials do that) is a path, not a folder
        fck = tune.Checkpoint(os.path.join(d, "model.txt"))
        with open(fck) as f:
            self.assertEqual(f.read(), "w=3")
        with self.assertRaisesRegex(NotADirectoryError, "is a file.*open it directly"):
            with fck.as_directory():
                pass

    def test_checkpoint_is_still_the_path_for_torch_load(self):
        # torch.load takes a str or a pathlib.Path, not any os.PathLike: the docs' own
        # torch.load(tune.get_checkpoint()) failed with "'Checkpoint' object has no
        # attribute 'seek'" when Checkpoint was only os.PathLike.
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        path = os.path.join(self.dir, "checkpoint.pt")
        torch.save({"epoch": 3}, path)
        with mock.patch.dict(os.environ, {"TUNE_RESUME_FROM": path}):
            self.assertEqual(torch.load(tune.get_checkpoint())["epoch"], 3)
            with open(tune.get_checkpoint(), "rb") as f:
                self.assertEqual(torch.load(f)["epoch"], 3)
            self.assertEqual(tune.get_checkpoint() + ".tmp", path + ".tmp")

    def test_get_checkpoint_is_a_checkpoint(self):
        env = {"TUNE_RESUME_FROM": "checkpoints/ckpt_3", "TUNE_TRIAL_DIR": "/d"}
        with mock.patch.dict(os.environ, env):
            for get in (tune.get_checkpoint, train.get_checkpoint, session.get_checkpoint):
                ck = get()
                self.assertIsInstance(ck, tune.Checkpoint)
                self.assertEqual(ck.path, "/d/checkpoints/ckpt_3")  # relative to the trial
        with mock.patch.dict(os.environ, {"TUNE_RESUME_FROM": ""}):
            self.assertIsNone(train.get_checkpoint())

    def test_report_passes_the_checkpoints_path_on(self):
        d = tempfile.mkdtemp(dir=self.dir)
        calls = []
        with mock.patch("tune_report.report",
                        lambda checkpoint=None, **m: calls.append((checkpoint, m)) or True):
            train.report({"loss": 1.0}, checkpoint=tune.Checkpoint.from_directory(d))
            session.report({"loss": 2.0}, checkpoint=tune.Checkpoint.from_directory(d))
            tune.report({"loss": 3.0}, checkpoint=d)
        self.assertEqual(calls, [(d, {"loss": 1.0}), (d, {"loss": 2.0}), (d, {"loss": 3.0})])
        for c, _ in calls:
            self.assertIs(type(c), str)

    def test_context_from_the_environment(self):
        env = {"TUNE_TRIAL_ID": "7", "TUNE_TRIAL_DIR": "/r/trial_00007",
               "TUNE_EXPERIMENT": "fm", "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4",
               "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1"}
        with mock.patch.dict(os.environ, env):
            c = train.get_context()
            self.assertEqual((c.get_trial_id(), c.get_trial_name(), c.get_trial_dir(),
                              c.get_experiment_name()), ("7", "trial_00007", "/r/trial_00007", "fm"))
            self.assertEqual((c.get_world_rank(), c.get_local_rank(), c.get_world_size(),
                              c.get_local_world_size(), c.get_node_rank()), (3, 1, 4, 2, 1))
            self.assertEqual((session.get_trial_name(), session.get_world_rank()),
                             ("trial_00007", 3))
        clean = {k: v for k, v in os.environ.items() if not k.startswith("TUNE_TRIAL")
                 and k not in ("RANK", "WORLD_SIZE", "TUNE_EXPERIMENT")}
        with mock.patch.dict(os.environ, clean, clear=True):
            c = tune.get_context()
            self.assertEqual((c.get_trial_id(), c.get_trial_name(), c.get_world_rank(),
                              c.get_world_size()), (None, None, 0, 1))

    def test_context_inside_a_real_trial(self):
        a = tune.run(ray_trainables.context, config={"x": 1}, name="ctx", verbose=0)
        r = a.trials()[0]["last_result"]
        self.assertEqual((r["trial_id"], r["trial_name"], r["experiment"], r["rank"],
                          r["world"], r["first_checkpoint"]),
                         ("0", "trial_00000", "ctx", 0, 1, True))
        self.assertEqual(r["trial_dir"], a.trials()[0]["trial_dir"])

    def test_result_checkpoint_and_best_checkpoint(self):
        grid = tune.Tuner(ray_trainables.saves_checkpoints,
                          param_space={"x": tune.grid_search([2.0, 1.0])},
                          tune_config=tune.TuneConfig(metric="loss", mode="min")).fit()
        best = grid.get_best_result()
        self.assertEqual(best.config, {"x": 1.0})  # last loss 1*2+1 = 3 against 2*2+1 = 5

        def state(ck):
            with ck.as_directory() as d:
                with open(os.path.join(d, "state.json")) as f:
                    return json.load(f)["i"]
        self.assertIsInstance(best.checkpoint, tune.Checkpoint)
        self.assertEqual(state(best.checkpoint), 5)  # the latest
        on_disk = [state(ck) for ck, _ in best.best_checkpoints]
        self.assertIn(5, on_disk)
        self.assertEqual(on_disk, sorted(on_disk))
        # the best checkpoint is the kept one whose result was best: iteration 3 unless
        # keep_checkpoints deleted it, then the best of those left
        a = grid.experiment
        self.assertEqual(state(a.best_checkpoint), min(on_disk, key=lambda i: abs(3 - i)))
        self.assertEqual(state(a.get_best_checkpoint(a.best_trial, "loss", "max")),
                         max(on_disk, key=lambda i: abs(3 - i)))
        self.assertEqual(state(a.get_last_checkpoint()), 5)
        self.assertEqual([state(r.checkpoint) for r in grid], [5, 5])


class Analysis(Case):
    def setUp(self):
        super().setUp()
        self.a = tune.run(trainables.quadratic, config={"x": tune.grid_search(XS)},
                          metric="loss", mode="min", name="ana", verbose=0)

    def test_best_trial_is_a_property_as_in_ray(self):
        self.assertIsInstance(self.a.best_trial, dict)
        self.assertEqual(self.a.best_trial["config"], {"x": 0.2})
        self.assertEqual(self.a.get_best_trial("acc", "min")["config"], {"x": 0.8})
        self.assertEqual(self.a.get_best_trial(scope="all")["trial"], "trial_00001")
        self.assertEqual(self.a.best_logdir, self.a.best_trial["trial_dir"])

    def test_get_best_config_by_any_metric_and_scope(self):
        self.assertEqual(self.a.get_best_config("acc", "max"), {"x": 0.2})
        self.assertEqual(self.a.get_best_config("loss", "max"), {"x": 0.8})
        self.assertEqual(self.a.get_best_config("loss", "max", scope="all"), {"x": 0.8})
        self.assertEqual(self.a.get_best_config("loss", "min", scope="avg"), {"x": 0.2})
        self.assertEqual(self.a.get_best_config("loss", "min", scope="last-5-avg"), {"x": 0.2})
        with self.assertRaisesRegex(ValueError, "scope must be"):
            self.a.get_best_config("loss", "min", scope="first")

    def test_trial_dataframes_by_trial_folder(self):
        frames = self.a.trial_dataframes
        dirs = [t["trial_dir"] for t in self.a.trials()]
        self.assertEqual(list(frames), dirs)
        for df in frames.values():
            self.assertEqual(len(df), 5)
        self.assertEqual(len(frames[self.a.best_logdir]), 5)

    def test_dataframe_of_best_results(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed")
        df = self.a.dataframe(metric="loss", mode="max")  # each trial's first (largest) loss
        self.assertEqual([round(v, 9) for v in df["loss"]], XS)
        with self.assertRaisesRegex(ValueError, "give both metric and mode"):
            self.a.dataframe(metric="loss")

    # Silent wrong result 5 (issue 28): these returned None on main; Ray raises.
    def test_unknown_metric_raises_with_did_you_mean(self):
        grid = tune.ResultGrid(self.a)
        with self.assertRaisesRegex(ValueError, r"no trial of 'ana' reported 'los' \(did you "
                                                r"mean 'loss'\?\); the trials reported: acc, "
                                                r"loss, tag, training_iteration"):
            grid.get_best_result(metric="los", mode="min")
        with self.assertRaisesRegex(ValueError, "reported 'nosuch'"):
            self.a.get_best_config("nosuch", "max")

    def test_another_metric_without_a_mode_raises(self):
        # Before: the experiment's mode ("min") was used for accuracy, the worst trial won.
        with self.assertRaisesRegex(ValueError, r"pass mode='min' or mode='max' for metric "
                                                r"'acc'"):
            tune.ResultGrid(self.a).get_best_result(metric="acc")

    def test_no_metric_raises_saying_to_pass_one(self):
        a = tune.run(trainables.quadratic, config={"x": tune.grid_search(XS)}, name="nometric",
                     verbose=0)
        for get in (lambda: a.best_config, lambda: a.best_trial, lambda: a.best_result,
                    lambda: tune.ResultGrid(a).get_best_result()):
            with self.assertRaisesRegex(ValueError, r"experiment 'nometric' has no metric.*"
                                                    r"pass metric= and mode=.*the trials "
                                                    r"reported: acc, loss, tag"):
                get()
        # and with them given, the answer
        self.assertEqual(tune.ResultGrid(a).get_best_result("loss", "min").config, {"x": 0.2})

    def test_metric_no_trial_reported_says_so(self):
        a = tune.run(ray_trainables.never_reports, config={"x": tune.grid_search([1, 2])},
                     metric="loss", mode="min", name="silent", verbose=0,
                     raise_on_failed_trial=False)
        with self.assertRaisesRegex(tune.TuneError, r"no trial of 'silent' has a value of "
                                                    r"'loss' in its last results to compare "
                                                    r"\(yet\): 2 ERROR \(the first, "
                                                    r"trial_00000: .*fails before its first "
                                                    r"result"):
            a.best_config
        with self.assertRaisesRegex(tune.TuneError, "has a value of 'loss'"):
            tune.ResultGrid(a).get_best_result()


class BoundObjects(Case):
    def test_with_parameters_runs_with_the_objects(self):
        t = tune.with_parameters(ray_trainables.with_data, data=[1, 2, 3], scale=10)
        a = tune.run(t, config={"x": tune.grid_search([0.5, 0.25])}, metric="loss",
                     mode="min", name="wp", verbose=0)
        self.assertEqual([tr["last_result"]["loss"] for tr in a.trials()], [60.5, 60.25])
        # the trial command is an ordinary importable function, as space.json keeps it
        with open(a.space_path) as f:
            cmd = json.load(f)["command"]
        self.assertRegex(cmd[3], r"^tune_params_[0-9a-f]{16}:with_data$")
        self.assertTrue(os.path.isdir(os.path.join(self.dir, "tune_params")))

    def test_functools_partial_runs(self):
        # Before: refused as "a lambda or a function defined inside another function".
        p = functools.partial(ray_trainables.with_data, data=[4, 5])
        grid = tune.Tuner(tune.with_resources(p, {"cpu": 1}), param_space={"x": 1.0},
                          tune_config=tune.TuneConfig(metric="loss", mode="min")).fit()
        self.assertEqual(grid[0].metrics["loss"], 10.0)

    def test_what_cannot_reach_a_trial_is_refused_with_the_reason(self):
        with self.assertRaisesRegex(ValueError, "a lambda or a function defined inside"):
            tune.build_space(functools.partial(lambda config, d: None, d=1), {})
        with self.assertRaisesRegex(TypeError, "cannot be pickled.*Load such an object inside"):
            tune.with_parameters(ray_trainables.with_data, data=lambda: 1)
        main = sys.modules["__main__"]
        cls = type("Data", (), {"__module__": "__main__"})
        with mock.patch.object(main, "Data", cls, create=True):
            with self.assertRaisesRegex(TypeError, r"Data is defined in the script run as "
                                                   r"__main__.*module of its own"):
                tune.with_parameters(ray_trainables.with_data, data=cls())
        with self.assertRaisesRegex(TypeError, "class trainables are not supported"):
            tune.with_parameters(type("T", (), {}), data=1)


def _copies_reported_checkpoints():
    """Whether this checkout's tune_report keeps a copy of a reported checkpoint (the PBT
    pattern of reporting a temporary folder needs it): report one from a temporary folder
    in a child process with a trial's environment and see whether the line names another
    path."""
    with tempfile.TemporaryDirectory() as top:
        ckdir, src = os.path.join(top, "trial", "checkpoints"), os.path.join(top, "tmp")
        os.makedirs(ckdir)
        os.makedirs(src)
        env = dict(os.environ, TUNE_TRIAL_DIR=os.path.dirname(ckdir), TUNE_CHECKPOINT_DIR=ckdir,
                   PYTHONPATH=PYDIR)
        p = subprocess.run([sys.executable, "-c", "import sys, tune_report; tune_report."
                            "report(loss=1.0, checkpoint=sys.argv[1])", src], env=env,
                           capture_output=True, text=True)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            return False
        named = json.loads(lines[-1]).get("checkpoint", "")
        return bool(named) and os.path.abspath(named) != src


class Scripts(Case):
    """Each script of examples/ray_style/ runs as `python3 SCRIPT --smoke-test` would for a
    user, in a fresh folder, to the kind of answer Ray's gives."""

    def script(self, name, *args):
        env = dict(os.environ, PYTHONPATH=PYDIR, TUNE_BIN=TUNE)
        p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], env=env,
                           capture_output=True, text=True, timeout=110)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertEqual(self.sql("SELECT count(*) FROM trials WHERE status = 'ERROR'"),
                         [(0,)], p.stderr[-3000:])
        return p.stdout

    def printed(self, out, prefix):
        line = [ln for ln in out.splitlines() if ln.startswith(prefix)][-1]
        return ast.literal_eval(line[len(prefix):].strip())

    def best_by_sql(self, metric, mode="min"):
        order = "DESC" if mode == "max" else "ASC"
        rows = self.sql(f"SELECT config FROM trial_summary WHERE last_metric IS NOT NULL "
                        f"ORDER BY last_metric {order}, trial_no LIMIT 1")
        return json.loads(rows[0][0])

    def test_quickstart(self):
        out = self.script("quickstart.py")
        best = self.printed(out, "Best config found:")
        configs = [json.loads(c) for (c,) in self.sql("SELECT config FROM trials")]
        self.assertEqual(len(configs), 4)  # the grid of a, b drawn for each
        self.assertEqual(best, min(configs, key=lambda c: c["a"] ** 2 + c["b"]))

    def test_an_unguarded_script_runs_and_its_tail_runs_once(self):
        # Ray's scripts call tune at the top level; each trial loads the script only up to
        # that call, so what follows it (here: a line appended to a file) runs once, in the
        # script's own process, and a tune.run inside the trainable is still refused
        script = os.path.join(self.dir, "unguarded.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                import os
                import tune

                with open({os.path.join(self.dir, "loaded.txt")!r}, "a") as f:
                    f.write("x")

                def objective(config):
                    return {{"score": config["a"]}}

                def nested(config):
                    tune.run(objective, config={{"a": 1}}, storage="inner.db")

                results = tune.Tuner(objective, param_space={{"a": tune.grid_search([1, 2])}},
                                     tune_config=tune.TuneConfig(metric="score", mode="min"),
                                     run_config=tune.RunConfig(name="outer",
                                                               storage={self.db!r})).fit()
                with open("after.txt", "a") as f:
                    f.write("x")
                print("best:", results.get_best_result().config)
                tune.run(nested, config={{"a": 1}}, name="nested", storage={self.db!r},
                         raise_on_failed_trial=False, fail_fast=False)
                """))
        env = dict(os.environ, PYTHONPATH=PYDIR, TUNE_BIN=TUNE)
        p = subprocess.run([sys.executable, script], env=env, cwd=self.dir,
                           capture_output=True, text=True, timeout=110)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertIn("best: {'a': 1}", p.stdout)
        self.assertEqual(self.sql("SELECT t.status FROM trials t JOIN experiments e ON "
                                  "e.id = t.experiment_id WHERE e.name = 'outer'"),
                         [("TERMINATED",), ("TERMINATED",)])
        with open(os.path.join(self.dir, "after.txt")) as f:
            self.assertEqual(f.read(), "x")  # the script's tail: once, not once per trial
        with open(os.path.join(self.dir, "loaded.txt")) as f:
            self.assertEqual(f.read(), "x" * 4)  # the script, then each of its 3 trials
        err = self.sql("SELECT error FROM trials t JOIN experiments e ON "
                       "e.id = t.experiment_id WHERE e.name = 'nested'")[0][0]
        self.assertIn("RuntimeError: tune.run was called inside a trial's function", err)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "inner.db")))

    def test_asha(self):
        out = self.script("asha.py")
        best = self.printed(out, "Best hyperparameters found were:")
        self.assertEqual(best, self.best_by_sql("mean_loss"))
        stopped = self.sql("SELECT count(*) FROM trials WHERE early_stopped = 1")[0][0]
        self.assertGreater(stopped, 0)
        full = self.sql("SELECT count(*) FROM trial_summary WHERE iterations = 30")[0][0]
        self.assertGreater(full, 0)

    def test_optuna_search(self):
        out = self.script("optuna_search.py")
        self.assertEqual(self.printed(out, "Best hyperparameters found were:"),
                         self.best_by_sql("mean_loss"))
        space = json.loads(self.sql("SELECT space_json FROM experiments")[0][0])
        self.assertEqual((space["search"], space["max_concurrent"]),
                         ({"type": "tpe", "preset": "optuna"}, 2))
        # every configuration was chosen at launch by the searcher (random until TPE's
        # model has its observations), which says so
        self.assertEqual(self.sql("SELECT count(*) FROM trials WHERE suggested_by IS NULL"),
                         [(0,)])
        by_tpe = self.sql("SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE%'")[0][0]
        self.assertGreater(by_tpe, 0)  # 30 trials: TPE chose the later ones
        self.assertGreater(self.sql("SELECT count(*) FROM trials WHERE early_stopped = 1")[0][0], 0)

    def test_hyperopt_search(self):
        out = self.script("hyperopt_search.py")
        self.assertEqual(self.printed(out, "Best hyperparameters found were:"),
                         self.best_by_sql("mean_loss"))
        first = [json.loads(c) for (c,) in
                 self.sql("SELECT config FROM trials ORDER BY trial_no LIMIT 2")]
        self.assertEqual([(c["width"], c["height"]) for c in first], [(10, 0), (50, 25)])
        by_tpe = self.sql("SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE%'")[0][0]
        self.assertGreater(by_tpe, 0)  # 24 trials: TPE chose the later ones
        self.assertGreater(self.sql("SELECT count(*) FROM trials WHERE early_stopped = 1")[0][0], 0)

    def test_bohb_search(self):
        out = self.script("bohb_search.py", "--smoke-test")
        self.assertEqual(self.printed(out, "Best hyperparameters found were:"),
                         self.best_by_sql("mean_loss"))
        space = json.loads(self.sql("SELECT space_json FROM experiments")[0][0])
        self.assertEqual((space["search"], space["scheduler"]["type"]),
                         ({"type": "tpe", "preset": "bohb"}, "hyperband"))

    def test_with_parameters(self):
        out = self.script("with_parameters.py", "--smoke-test")
        self.assertEqual(self.printed(out, "Best hyperparameters found were:"),
                         self.best_by_sql("loss"))
        self.assertLess(float(out.split("Best loss:")[1].split()[0]), 0.05)

    def test_fmnist_torch(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("torch is not installed")
        if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
            self.skipTest("no Fashion-MNIST in /usr/share/datasets/fashion-mnist")
        out = self.script("fmnist_torch.py", "--smoke-test")
        self.assertEqual(self.printed(out, "Best hyperparameters found were:"),
                         self.best_by_sql("mean_accuracy", "max"))
        self.assertGreater(float(out.split("Best accuracy:")[1].split()[0]), 0.5)  # 10 classes

    def test_pbt(self):
        if not _copies_reported_checkpoints():
            self.skipTest("this tune_report does not copy a reported checkpoint yet (issue 28, "
                          "the h-ckpt branch): Ray's PBT pattern reports a temporary folder")
        out = self.script("pbt.py", "--smoke-test")
        best = self.printed(out, "Best hyperparameters found were:")
        self.assertEqual(best, self.best_by_sql("mean_accuracy", "max"))
        self.assertGreater(self.sql("SELECT count(*) FROM lineage")[0][0], 0)
        self.assertGreater(self.sql("SELECT count(*) FROM decisions WHERE action = 'exploit'")
                           [0][0], 0)
        self.assertNotIn("Its latest checkpoint: None", out)


if __name__ == "__main__":
    unittest.main()
