"""tune.run end to end with the real tune binary: a function trainable and a command
trainable under ASHA, what a notebook sees, failures as tune.TuneError with tune's
message, Ctrl-C and resume."""

import io
import json
import os
import signal
import subprocess
import sys
import time
import unittest
from unittest import mock

from helpers import HERE, Case, tune
import trainables

# Grid points in trial order; at most one trial at a time, so ASHA's decisions are fixed:
# 0.9 and 0.8 are worse than 0.1 at the first rung (reduction_factor 2) and are stopped.
GRID = [0.1, 0.9, 0.2, 0.8]
ASHA = dict(metric="loss", mode="min", max_concurrent_trials=1,
            scheduler=tune.ASHAScheduler(max_t=5, grace_period=1, reduction_factor=2))


class Run(Case):
    def check_asha(self, a, name):
        self.assertEqual(a.name, name)
        trials = a.trials()
        self.assertEqual([t["config"]["x"] for t in trials], GRID)
        self.assertTrue(all(t["status"] == "TERMINATED" for t in trials), trials)
        stopped = {t["config"]["x"] for t in trials if t["early_stopped"]}
        self.assertIn(0.9, stopped)
        self.assertNotIn(0.1, stopped)
        self.assertEqual(a.best_config["x"], 0.1)
        self.assertAlmostEqual(a.best_result["loss"], 0.1 / 5)
        n_stop = self.sql("SELECT count(*) FROM decisions WHERE action = 'stop'")[0][0]
        self.assertGreaterEqual(n_stop, 1)
        # The generated file is next to the database and the CLI reads it.
        self.assertEqual(a.space_path, os.path.join(self.dir, f"{name}.space.json"))
        with open(a.space_path) as f:
            self.assertEqual(json.load(f)["scheduler"]["type"], "asha")

    def test_function_trainable_asha(self):
        a = tune.run(trainables.quadratic, config={"x": tune.grid_search(GRID), "sleep": 0.05},
                     name="fn", storage="tune.db", **ASHA)
        self.check_asha(a, "fn")
        first = a.results(trial=0)
        self.assertEqual([r["iteration"] for r in first], [1, 2, 3, 4, 5])
        self.assertEqual(first[0]["tag"], "None")  # every reported key comes back

    def test_command_trainable_asha(self):
        cmd = [sys.executable, os.path.join(HERE, "cmd_trial.py"), "--x", "{x}", "--sleep", "0.05"]
        a = tune.run(cmd, config={"x": tune.grid_search(GRID)}, name="cmd", storage="tune.db",
                     **ASHA)
        self.check_asha(a, "cmd")

    def test_script_main_function_trainable(self):
        # A function defined in the script being run (__main__) is loaded from its file.
        script = os.path.join(self.dir, "script.py")
        with open(script, "w") as f:
            f.write("import tune\n"
                    "def train(config):\n"
                    "    tune.report(loss=config['x'] * 2)\n"
                    "    return {'loss': config['x'], 'done': True}\n"
                    "if __name__ == '__main__':\n"
                    "    a = tune.run(train, config={'x': tune.grid_search([3, 1])}, metric='loss',"
                    " name='main', storage='tune.db', verbose=0)\n"
                    "    print('BEST', a.best_config['x'], a.best_result['loss'], a.best_result['done'])\n")
        p = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("BEST 1 1 True", p.stdout)
        self.assertIn(f"{script}:train", open(os.path.join(self.dir, "main.space.json")).read())

    def test_package_main_function_trainable(self):
        # `python -m pkg.run`: the function is imported by its module's own name.
        os.makedirs("proj/pkg")
        open("proj/pkg/__init__.py", "w").close()
        with open("proj/pkg/run.py", "w") as f:
            f.write("import tune\n"
                    "from . import helper\n"
                    "def train(config):\n"
                    "    tune.report(loss=helper.square(config['x']))\n"
                    "if __name__ == '__main__':\n"
                    "    a = tune.run(train, config={'x': tune.grid_search([3, -2])}, metric='loss',"
                    " name='pkg', storage='../tune.db', verbose=0)\n"
                    "    print('BEST', a.best_config['x'], a.best_result['loss'])\n")
        with open("proj/pkg/helper.py", "w") as f:
            f.write("def square(x):\n    return x * x\n")
        p = subprocess.run([sys.executable, "-m", "pkg.run"], capture_output=True, text=True,
                           timeout=60, cwd=os.path.join(self.dir, "proj"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("BEST -2 4", p.stdout)
        with open("pkg.space.json") as f:
            cmd = json.load(f)["command"]
        self.assertEqual(cmd[3:], ["pkg.run:train", "--path", os.path.join(self.dir, "proj")])

    def test_notebook_gets_plain_lines(self):
        # In a notebook sys.stdout is no file descriptor: tune's output comes through it.
        out = io.StringIO()
        with mock.patch.object(sys, "stdout", out):
            tune.run(trainables.quadratic, config={"x": 0.5}, name="nb", storage="tune.db")
        text = out.getvalue()
        self.assertIn("== Status ==", text)
        self.assertIn("Finished nb:", text)
        self.assertNotIn("\x1b[", text)  # no cursor movement: plain lines

    def test_terminal_gets_the_live_table(self):
        # On a terminal tune's stdout is that terminal: the table is redrawn in place.
        import pty
        code = ("import tune, trainables\n"
                "tune.run(trainables.quadratic, config={'x': tune.grid_search([1, 2])},"
                " name='tty', storage='tune.db', max_concurrent_trials=1)\n")
        master, slave = pty.openpty()
        p = subprocess.Popen([sys.executable, "-c", code], stdout=slave, stderr=slave,
                             stdin=subprocess.DEVNULL)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        self.assertEqual(p.wait(timeout=60), 0, out.decode(errors="replace"))
        text = out.decode(errors="replace")
        self.assertIn("\x1b[", text)  # cursor movement: the in-place table
        self.assertIn("Finished tty:", text)

    def test_generated_names_never_collide(self):
        names = set()
        for _ in range(2):  # within one second: the same generated name, twice
            a = tune.run(trainables.quadratic, config={"x": 1}, storage="tune.db", verbose=0)
            names.add(a.name)
            self.assertEqual(a.trials()[0]["status"], "TERMINATED")
        self.assertEqual(len(names), 2)
        self.assertTrue(all(n.startswith("quadratic_") for n in names), names)

    def test_returned_dict_is_the_last_result(self):
        a = tune.run(trainables.returns_dict, config={"x": 1}, metric="loss", name="ret",
                     storage="tune.db", verbose=0)
        self.assertEqual(a.best_result["loss"], 1.0)
        self.assertIs(a.best_result["final"], True)
        self.assertEqual(a.trials()[0]["iterations"], 2)


class Failures(Case):
    def test_trial_errors_raise_with_the_trial_error(self):
        with self.assertRaises(tune.TuneError) as cm:
            tune.run(trainables.fails, config={"x": tune.grid_search([7, 8])}, name="bad",
                     storage="tune.db", verbose=0)
        e = cm.exception
        self.assertRegex(str(e), r"[12] trial\(s\) of bad ended in ERROR")
        self.assertIn("trial_00000", str(e))
        self.assertIsNotNone(e.analysis)
        # Both ran and failed (a fail_fast default may leave a later trial PENDING instead).
        self.assertEqual(e.analysis.trials()[0]["status"], "ERROR")
        self.assertTrue(all(t["status"] in ("ERROR", "PENDING") for t in e.analysis.trials()))
        stderr = open(os.path.join(e.analysis.trials()[0]["trial_dir"], "stderr.log")).read()
        self.assertIn("ValueError: boom 7", stderr)
        # Ray's raise_on_failed_trial=False: the analysis comes back instead.
        a = tune.run(trainables.fails, config={"x": 1}, name="bad2", storage="tune.db",
                     verbose=0, raise_on_failed_trial=False)
        self.assertEqual(a.trials()[0]["status"], "ERROR")

    def test_failed_run_raises_tunes_message(self):
        tune.run(trainables.quadratic, config={"x": 1}, name="twice", storage="tune.db", verbose=0)
        with self.assertRaises(tune.TuneError) as cm:
            tune.run(trainables.quadratic, config={"x": 1}, name="twice", storage="tune.db",
                     verbose=0)
        self.assertEqual(cm.exception.exit_code, 1)
        self.assertIn('experiment "twice" already exists', str(cm.exception))
        self.assertIn("restart=True", str(cm.exception))  # the Python remedy, not --restart
        # restart=True runs it again under the next free name.
        a = tune.run(trainables.quadratic, config={"x": 1}, name="twice", storage="tune.db",
                     verbose=0, restart=True)
        self.assertEqual(a.name, "twice-2")

    def test_bad_space_raises_with_position(self):
        with self.assertRaises(tune.TuneError) as cm:
            tune.run(trainables.quadratic, config={"x": 1}, name="gpu", storage="tune.db",
                     resources_per_trial={"gpu": 0.3}, verbose=0)
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertRegex(str(cm.exception), r"gpu\.space\.json:\d+:\d+: \"gpus_per_trial\" must be")

    def test_missing_binary(self):
        with mock.patch.dict(os.environ, {"TUNE_BIN": os.path.join(self.dir, "nope")}):
            with self.assertRaisesRegex(tune.TuneError, "TUNE_BIN=.*nope is not an executable"):
                tune.run(trainables.quadratic, config={"x": 1}, name="x", storage="tune.db")

    def test_run_inside_a_trial_is_refused(self):
        with mock.patch.dict(os.environ, {"TUNE_PYTHON_TRIAL": "1"}):
            with self.assertRaisesRegex(RuntimeError, "if __name__ == "):
                tune.run(trainables.quadratic, config={"x": 1}, name="x", storage="tune.db")


class Tuners(Case):
    def test_tuner_fit_is_tune_run(self):
        tuner = tune.Tuner(
            tune.with_resources(trainables.quadratic, {"cpu": 1}),
            param_space={"x": tune.grid_search(GRID), "sleep": 0.05},
            tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=1,
                                        scheduler=ASHA["scheduler"]),
            run_config=tune.RunConfig(name="tuner", storage="tune.db", verbose=0,
                                      failure_config=tune.FailureConfig(max_failures=1)))
        grid = tuner.fit()
        self.assertEqual(len(grid), 4)
        self.assertEqual(grid.num_errors, 0)
        self.assertEqual(grid.get_best_result().config["x"], 0.1)
        self.assertAlmostEqual(grid.get_best_result().metrics["loss"], 0.1 / 5)
        self.assertEqual(grid.get_best_result(metric="acc", mode="max").config["x"], 0.1)
        self.assertEqual(grid.get_best_result(metric="loss", mode="max", scope="all").config["x"], 0.9)
        self.assertEqual(len(grid[0]._rows()), 5)
        self.assertIn(grid[1].path, [t["trial_dir"] for t in grid.experiment.trials()])
        # The file Tuner.fit wrote is the one tune.run writes for the same arguments.
        with open("tuner.space.json") as f:
            written = json.load(f)
        self.assertEqual(written, tune.build_space(
            trainables.quadratic, {"x": tune.grid_search(GRID), "sleep": 0.05}, name="tuner",
            resources_per_trial={"cpu": 1}, max_failures=1, **ASHA))

    def test_tuner_tpe_with_points_to_evaluate(self):
        cmd = [sys.executable, os.path.join(HERE, "cmd_trial.py"), "--x", "{x}"]
        tuner = tune.Tuner(
            cmd, param_space={"x": tune.uniform(0, 1)},
            tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=4,
                                        max_concurrent_trials=1, search_alg="tpe",
                                        points_to_evaluate=[{"x": 0.25}, {"x": 0.75}]),
            run_config=tune.RunConfig(name="tpe", storage="tune.db", verbose=0))
        grid = tuner.fit()
        self.assertEqual(len(grid), 4)
        self.assertEqual([r.config["x"] for r in grid][:2], [0.25, 0.75])
        self.assertEqual(self.sql("SELECT suggested_by FROM trials ORDER BY trial_no"),
                         [("points_to_evaluate[0]",), ("points_to_evaluate[1]",),
                          ("random: model not ready (2 of 10 observations)",),
                          ("random: model not ready (3 of 10 observations)",)])

    def test_tuner_refusals(self):
        with self.assertRaisesRegex(TypeError, "'storage_path' is not supported: pass storage="):
            tune.RunConfig(storage_path="/tmp/x")
        with self.assertRaisesRegex(TypeError, "CheckpointConfig is not supported"):
            tune.CheckpointConfig(num_to_keep=2)
        with self.assertRaisesRegex(TypeError, "'reuse_actors' is not supported"):
            tune.TuneConfig(reuse_actors=True)
        with self.assertRaisesRegex(TypeError, "tune.resume"):
            tune.Tuner.restore("/tmp/x", trainables.quadratic)


DRIVER = """
import sys, tune
sys.path.insert(0, {here!r})
import trainables
try:
    tune.run(trainables.resumable, config={{"x": tune.grid_search([1, 2, 3, 4])}},
             metric="loss", name="ctrlc", storage="tune.db", max_concurrent_trials=2,
             stop_grace_s=2)
    print("FINISHED")
except KeyboardInterrupt:
    print("INTERRUPTED")
    sys.exit(130)
"""


class CtrlC(Case):
    def test_ctrl_c_then_resume(self):
        driver = os.path.join(self.dir, "driver.py")
        with open(driver, "w") as f:
            f.write(DRIVER.format(here=HERE))
        p = subprocess.Popen([sys.executable, driver], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        # Wait until both running trials have reported a few results, reading the
        # database while tune writes it, as a notebook would.
        deadline = time.time() + 60
        while time.time() < deadline:
            time.sleep(0.2)
            try:
                trials = tune.Experiment("ctrlc", storage="tune.db").trials()
            except tune.TuneError:
                continue
            if sum(t["status"] == "RUNNING" and t["iterations"] >= 3 for t in trials) == 2:
                break
        else:
            p.kill()
            self.fail("the trials never ran")
        p.send_signal(signal.SIGINT)  # Ctrl-C to Python alone: it passes one on to tune
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, out + err)
        self.assertIn("INTERRUPTED", out)
        self.assertIn("tune.resume('ctrlc', storage=", err)  # the Python remedy
        ex = tune.Experiment("ctrlc", storage="tune.db")
        self.assertEqual(ex.summary()["status"], "INTERRUPTED")
        paused = [t for t in ex.trials() if t["status"] == "PAUSED"]
        self.assertEqual(len(paused), 2, ex.trials())
        done_before = {t["trial"]: t["iterations"] for t in paused}

        a = tune.resume("ctrlc", storage="tune.db", verbose=0)
        self.assertEqual(a.summary()["status"], "FINISHED")
        trials = {t["trial"]: t for t in a.trials()}
        self.assertTrue(all(t["status"] == "TERMINATED" for t in trials.values()))
        for name, n in done_before.items():
            t = trials[name]
            self.assertEqual(t["attempt"], 2)
            # Every iteration is recorded once, or said lost: the trainable saves its
            # checkpoint file before it reports, and names none, so a stop that lands
            # between the two (a loaded machine widens that moment) resumes past an
            # iteration that was never reported. tune records that as a 'gap' decision
            # naming it (docs/durability.md), never silently.
            got = [i for (i,) in self.sql(
                "SELECT r.iteration FROM results_current r JOIN trials x ON x.id = r.trial_id"
                " WHERE x.name = ? ORDER BY r.iteration", name)]
            self.assertEqual(len(got), len(set(got)), got)
            lost = sorted(set(range(1, 21)) - set(got))
            self.assertEqual(len(got) + len(lost), 20, got)
            if lost:
                gaps = self.sql(
                    "SELECT d.iteration, d.reason FROM decisions d JOIN trials x"
                    " ON x.id = d.trial_id WHERE x.name = ? AND d.action = 'gap'", name)
                self.assertEqual([g[0] for g in gaps], [lost[-1] + 1], (lost, gaps))
                self.assertIn(f"iteration{'s' if len(lost) > 1 else ''} {lost[0]}", gaps[0][1])
            self.assertEqual(t["iterations"], len(got))
            # The new attempt started from the checkpoint (tune.get_checkpoint()).
            self.assertGreaterEqual(t["last_result"]["resumed_from"], n - 1)
            self.assertGreater(t["last_result"]["resumed_from"], 0)


if __name__ == "__main__":
    unittest.main()
