"""Checkpoints and results of Python trials, as Ray Tune users write them (issue 28, items 2
to 4): Ray's PBT pattern with a temporary folder (tune_report copies what is reported), PBT
whose trials never report a checkpoint (said loudly, no clone restored from nothing), no
false "buffers its output" warning for resumed attempts, and prints of a function
trainable kept as logs, never taken for results. The trainables are defined here, at the
top level, so that each trial imports them by name (python -m tune.trial)."""

import contextlib
import io
import json
import os
import pathlib
import tempfile
import time
import unittest

from helpers import Case, tune

import tune_report

STEPS = 12
STEP_S = 0.1  # a step takes a while, so that a pause's SIGTERM lands before the trial's end


def _warm_up_if_resumed():
    """A resumed attempt takes a while before its first result, as one that imports torch
    and loads a checkpoint does: the case where a timing rule once cried "buffered"."""
    if os.environ.get("TUNE_RESUME_FROM"):
        time.sleep(3.5)


def ray_pbt(config):
    """Ray's pbt_function idiom: save into a temporary folder, report it, and the folder is
    gone once report returns. The state is (step, value); each step adds config["lr"]."""
    step, value = 0, 0.0
    ckpt = tune.get_checkpoint()
    if ckpt:
        with open(os.path.join(ckpt, "state.json")) as f:
            state = json.load(f)
        step, value = state["step"], state["value"]
        _warm_up_if_resumed()
    while step < STEPS:
        time.sleep(STEP_S)
        step += 1
        value += config["lr"]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "state.json"), "w") as f:
                json.dump({"step": step, "value": value}, f)
            tune.report({"value": value, "step": step, "lr": config["lr"]},
                        checkpoint=pathlib.Path(d))


def saves_but_never_reports(config):
    """docs/from-ray-tune.md's old pattern: a checkpoint file in the trial's folder, saved
    atomically, but never named in a result."""
    step, value = 0, 0.0
    if tune.get_checkpoint():
        with open(tune.get_checkpoint()) as f:
            state = json.load(f)
        step, value = state["step"], state["value"]
        _warm_up_if_resumed()
    path = os.path.join(tune.get_trial_dir(), "checkpoint.json")
    while step < STEPS:
        time.sleep(STEP_S)
        step += 1
        value += config["lr"]
        with open(path + ".tmp", "w") as f:
            json.dump({"step": step, "value": value}, f)
        os.replace(path + ".tmp", path)
        # training_iteration as in the trial's own count: a pause that resumes from the file
        # (whose iteration tune cannot know) then counts right
        tune.report(value=value, step=step, training_iteration=step)


def prints_its_config(config):
    print(json.dumps(config))
    print(json.dumps({"value": -1.0, "step": 99}), flush=True)  # a dict that looks like a result
    for step in range(1, 4):
        tune.report(value=config["x"] * step, step=step)


def pbt_run(fn, name):
    """PBT over 4 trials on 2 CPUs (trials pause at perturbation points and take turns, so
    donors are paused and running); tune's stdout and stderr, and the analysis."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        a = tune.run(fn, config={"lr": tune.uniform(0.1, 1.0)}, num_samples=4, metric="value",
                     mode="max", name=name, storage="tune.db", seed=3, cpus=2, verbose=1,
                     scheduler=tune.PopulationBasedTraining(perturbation_interval=3),
                     raise_on_failed_trial=False)
    return a, out.getvalue(), err.getvalue()


class Checkpoints(Case):
    def no_jumps(self, gaps=False):
        """Each trial's current results hold steps 1..12 once each, iteration = step (with
        gaps: steps a trial computed between a pause decision and its SIGTERM, which a
        trial that never names its checkpoint may resume after, are missing)."""
        rows = self.sql("SELECT trial_id, iteration, json_extract(data, '$.step') FROM "
                        "results_current ORDER BY trial_id, iteration")
        by = {}
        for tid, it, step in rows:
            self.assertEqual(it, step, f"trial {tid}: iteration {it} holds step {step}")
            by.setdefault(tid, []).append(it)
        self.assertEqual(len(by), 4)
        # a clone goes on from its donor's checkpoint: when the donor was ahead (a loaded
        # machine lets it run on before the exploit), the iterations between are the
        # donor's, never the clone's own (Ray's PBT does the same)
        skipped = {}
        for tid, at, donor_at in self.sql("SELECT trial_id, iteration, donor_iteration "
                                          "FROM lineage"):
            skipped.setdefault(tid, set()).update(range(at + 1, donor_at + 1))
        for tid, its in by.items():
            if gaps:
                self.assertEqual(its[:3], [1, 2, 3], f"trial {tid}: {its}")
                self.assertEqual(its, sorted(set(its)), f"trial {tid}: {its}")
            else:
                want = [i for i in range(1, STEPS + 1) if i in its or i not in
                        skipped.get(tid, ())]
                self.assertEqual(its, want, f"trial {tid}: {its}, lineage {skipped.get(tid)}")

    def test_ray_temporary_directory_pattern(self):
        a, out, err = pbt_run(ray_pbt, "raypbt")
        self.assertEqual(self.sql("SELECT count(*) FROM trials WHERE status != 'TERMINATED'"),
                         [(0,)], out + err)
        lineage = self.sql("SELECT trial_id, attempt, donor_trial_id, donor_iteration, "
                           "json_extract(new_config, '$.lr'), resume_from FROM lineage")
        self.assertGreaterEqual(len(lineage), 1, out + err)
        for tid, attempt, donor, at, lr, copy in lineage:
            # the copy the clone was given is a folder inside its own trial folder
            self.assertIn(f"/tune_results/raypbt/trial_{tid - 1:05d}/resume/", copy)
            self.assertTrue(os.path.isdir(copy) or not os.path.exists(copy))
            if at == STEPS:
                continue  # the donor was at its end: the clone has nothing left to run
            # the clone went on from the donor's state at the donor's iteration, with its own
            # lr: its result at the next iteration under the new lr (a later exploit may have
            # replaced it in the current history, never in results_all) is the donor's value
            # there plus that lr
            donor_values = [v for (v,) in self.sql(
                "SELECT json_extract(data, '$.value') FROM results_all WHERE trial_id = ? AND "
                "iteration = ?", donor, at)]
            clone = self.sql("SELECT json_extract(data, '$.value'), json_extract(data, '$.step') "
                             "FROM results_all WHERE trial_id = ? AND iteration = ? AND "
                             "abs(json_extract(data, '$.lr') - ?) < 1e-12", tid, at + 1, lr)
            self.assertTrue(clone, f"trial {tid}: no result at {at + 1} under lr {lr}")
            self.assertTrue(all(step == at + 1 for _, step in clone))
            self.assertTrue(any(abs(v - (d + lr)) < 1e-9 for v, _ in clone for d in donor_values),
                            f"trial {tid} at {at + 1}: {clone}, donor at {at}: {donor_values}")
        self.no_jumps()
        # what each result named is a copy in the trial's checkpoint folder
        named = self.sql("SELECT json_extract(data, '$.checkpoint') FROM results_all")
        self.assertTrue(named and all("/checkpoints/checkpoint_" in n for (n,) in named))
        self.assertNotIn("buffers its output", out + err)

    def test_pbt_without_reported_checkpoints_says_so(self):
        a, out, err = pbt_run(saves_but_never_reports, "nockpt")
        self.assertEqual(self.sql("SELECT count(*) FROM trials WHERE status != 'TERMINATED'"),
                         [(0,)])
        # no clone restored from nothing
        self.assertEqual(self.sql("SELECT count(*) FROM lineage"), [(0,)])
        self.assertEqual(self.sql("SELECT count(*) FROM decisions WHERE action = 'exploit'"),
                         [(0,)])
        self.no_jumps(gaps=True)
        # said loudly, with the fix: on stderr once, and in the decisions
        self.assertEqual(err.count("PBT cannot exploit"), 1, err)
        self.assertIn("tune.report(..., checkpoint=PATH)", err)
        skipped = self.sql("SELECT count(*) FROM decisions WHERE reason LIKE "
                           "'%has never reported a checkpoint: no exploit. Report each "
                           "checkpoint: tune.report(..., checkpoint=PATH)%'")
        self.assertGreaterEqual(skipped[0][0], 1)

    def test_no_false_buffering_warning_for_resumed_attempts(self):
        a, out, err = pbt_run(saves_but_never_reports, "nobuf")
        # trials were paused and resumed from their checkpoints (slowly, after 3.5 s) and
        # reported their last iterations just before their exit
        resumed = self.sql("SELECT count(*) FROM decisions WHERE action = 'resume'")
        self.assertGreaterEqual(resumed[0][0], 1, out + err)
        self.assertIn("Finished nobuf", out)
        self.assertNotIn("buffers its output", out + err)

    def test_prints_of_a_function_trainable_are_logs(self):
        a = tune.run(prints_its_config, config={"x": tune.grid_search([1.0, 2.0])},
                     metric="value", mode="max", name="prints", storage="tune.db", verbose=0)
        self.assertEqual(self.sql("SELECT count(*) FROM trials WHERE status = 'TERMINATED'"),
                         [(2,)])
        self.assertEqual(self.sql("SELECT count(*) FROM results"), [(6,)])
        self.assertEqual(self.sql("SELECT max(json_extract(data, '$.step')) FROM results"),
                         [(3,)])
        self.assertEqual(a.best_config, {"x": 2.0})
        trial_dir = self.sql("SELECT trial_dir FROM trials ORDER BY trial_no LIMIT 1")[0][0]
        with open(os.path.join(trial_dir, "stderr.log")) as f:
            log = f.read()
        self.assertIn('{"x": 1}\n', log)
        self.assertIn('{"value": -1.0, "step": 99}\n', log)
        with open(os.path.join(trial_dir, "stdout.log")) as f:
            results = f.read()
        self.assertNotIn('"x"', results)
        self.assertEqual(results.count('"value"'), 3)


class ReportHelper(Case):
    """tune_report.report(checkpoint=...) in this process, as inside a trial."""

    def setUp(self):
        super().setUp()
        self.ckdir = os.path.join(self.dir, "trial", "checkpoints")
        os.makedirs(self.ckdir)
        self.env = dict(os.environ)
        os.environ["TUNE_CHECKPOINT_DIR"] = self.ckdir
        os.environ["TUNE_TRIAL_DIR"] = os.path.dirname(self.ckdir)
        os.environ.pop("RANK", None)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)
        super().tearDown()

    def report(self, **kw):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertTrue(tune_report.report(**kw))
        return json.loads(out.getvalue())

    def test_a_checkpoint_elsewhere_is_copied_whole(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "model.bin"), "w") as f:
                f.write("weights 1")
            os.mkdir(os.path.join(d, "sub"))
            with open(os.path.join(d, "sub", "opt.bin"), "w") as f:
                f.write("moments")
            r1 = self.report(loss=1.0, checkpoint=pathlib.Path(d))  # os.PathLike
        self.assertEqual(r1["checkpoint"], os.path.join(self.ckdir, "checkpoint_000001"))
        with open(os.path.join(r1["checkpoint"], "model.bin")) as f:
            self.assertEqual(f.read(), "weights 1")
        with open(os.path.join(r1["checkpoint"], "sub", "opt.bin")) as f:
            self.assertEqual(f.read(), "moments")
        # a file outside the trial's folder, saved again under the same name: each report
        # keeps what it reported
        path = os.path.join(self.dir, "elsewhere.pt")
        for i in (2, 3):
            with open(path, "w") as f:
                f.write(f"weights {i}")
            r = self.report(loss=1.0 / i, checkpoint=path)
            self.assertEqual(r["checkpoint"], os.path.join(self.ckdir, f"checkpoint_{i:06d}"))
        with open(os.path.join(self.ckdir, "checkpoint_000002")) as f:
            self.assertEqual(f.read(), "weights 2")
        # nothing half-made is left beside them
        self.assertEqual(sorted(os.listdir(self.ckdir)),
                         ["checkpoint_000001", "checkpoint_000002", "checkpoint_000003"])

    def test_a_checkpoint_in_the_folder_is_named_as_it_is(self):
        path = os.path.join(self.ckdir, "mine.pt")
        with open(path, "w") as f:
            f.write("w")
        self.assertEqual(self.report(loss=1.0, checkpoint=path)["checkpoint"], path)
        self.assertEqual(os.listdir(self.ckdir), ["mine.pt"])

    def test_a_checkpoint_in_the_trials_folder_is_named_as_it_is(self):
        # the trial's own file (examples/torch_resumable saves checkpoint.pt there each
        # epoch): no copy per report, which no scheduler but PBT would ever trim
        path = os.path.join(self.dir, "trial", "checkpoint.pt")
        for i in (1, 2, 3):
            with open(path, "w") as f:
                f.write(f"weights {i}")
            self.assertEqual(self.report(loss=1.0 / i, checkpoint=path)["checkpoint"], path)
        self.assertEqual(os.listdir(self.ckdir), [])

    def test_a_copy_cut_short_is_cleared_and_never_named(self):
        # what a killed attempt left (pid 2**22 + 1 is beyond Linux's pid_max default)
        left = os.path.join(self.ckdir, f".checkpoint_000001.partial-{2 ** 22 + 1}")
        os.mkdir(left)
        with tempfile.TemporaryDirectory() as d:
            r = self.report(loss=1.0, checkpoint=d)
        self.assertEqual(r["checkpoint"], os.path.join(self.ckdir, "checkpoint_000001"))
        self.assertEqual(os.listdir(self.ckdir), ["checkpoint_000001"])

    def test_a_missing_checkpoint_is_refused_at_once(self):
        with self.assertRaisesRegex(FileNotFoundError, "save it completely, then report it"):
            tune_report.report(loss=1.0, checkpoint=os.path.join(self.dir, "nothing"))

    def test_the_checkpoint_folder_itself_is_refused(self):
        with self.assertRaisesRegex(ValueError, "is the trial's checkpoint folder itself"):
            tune_report.report(loss=1.0, checkpoint=self.ckdir)
        self.assertEqual(os.listdir(self.ckdir), [])

    def test_ranks_other_than_0_write_and_copy_nothing(self):
        os.environ["RANK"] = "1"
        with tempfile.TemporaryDirectory() as d:
            self.assertFalse(tune_report.report(loss=1.0, checkpoint=d))
        self.assertEqual(os.listdir(self.ckdir), [])


if __name__ == "__main__":
    unittest.main()
