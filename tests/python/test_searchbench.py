"""The search benchmark's harness (bench/search/bench.py) on a tiny synthetic task: the
Optuna replay keeps W trials running on the virtual clock and stops at the budget, each
result arrives when the table says, and a two-seed run of every method writes well-formed
results; and the Python port of the synthetic family (bench/sim/synth_family.py), which
answers Optuna on the family tasks, gives tune's curves to the bit. Needs python3-optuna
(the harness's tests are skipped without it) and the tune binary of this build."""

import glob
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from helpers import SOURCE, TUNE

sys.path.insert(0, os.path.join(SOURCE, "bench", "search"))
sys.path.insert(0, os.path.join(SOURCE, "bench", "sim"))

try:
    import optuna  # noqa: F401
    HAVE_OPTUNA = True
except ImportError:
    HAVE_OPTUNA = False


class FamilyPort(unittest.TestCase):
    """bench/sim/synth_family.py against `tune simulate --synthetic`: if the port drifts
    from sim/synth.c (the formula, the unit map, the noise's seeding, the order of the
    parameters), the family tasks' Optuna would be answered by another family than tune."""

    def setUp(self):
        if not os.access(TUNE, os.X_OK):
            self.skipTest(f"no tune binary at {TUNE} (build first)")
        self.dir = tempfile.mkdtemp(prefix="tune-family-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def simulated_table(self, task, n, sched):
        """n configurations of the task's space under sched, simulated on its family and
        exported as a table: (its path, the space.json it ran)."""
        with open(os.path.join(SOURCE, "bench", "search", task["space"])) as f:
            sp = json.load(f)
        sp.update({"name": "c", "num_samples": n, "seed": 11, "max_concurrent": 32})
        if sched == "fifo":
            sp["scheduler"] = {"type": "fifo"}
        d = tempfile.mkdtemp(dir=self.dir)
        with open(os.path.join(d, "space.json"), "w") as f:
            json.dump(sp, f)
        subprocess.run([TUNE, "simulate", "space.json", "--synthetic", task["family"],
                        "--db", "c.db", "--quiet"], cwd=d, check=True, capture_output=True)
        p = subprocess.run([TUNE, "export", "c-sim", "--table", "--db", "c.db"], cwd=d,
                           check=True, capture_output=True, text=True)
        path = os.path.join(d, "c.csv")
        with open(path, "w") as f:
            f.write(p.stdout)
        return path, sp

    def test_the_port_gives_tunes_curves_to_the_bit_on_the_family_tasks(self):
        import runs
        import synth_family as sf
        tasks = [t for t in runs.TASKS if "family" in t]
        self.assertEqual([t["name"] for t in tasks], ["synth4-family", "synth8-family"])
        for task in tasks:
            # FIFO: every curve whole (the diverged ones report NaN to the end); ASHA: the
            # configurations its searcher drew, cut at the rungs
            for sched, n in (("fifo", 150), ("asha", 300)):
                path, sp = self.simulated_table(task, n, sched)
                fam = sf.Family.for_space(sp, task["family"])
                out, notes = sf.check_table(fam, path)
                self.assertEqual(out["mismatches"], 0, (task["name"], sched, notes))
                if sched == "fifo":
                    self.assertEqual(out["rows"], n * 27, task["name"])
                else:
                    self.assertGreater(out["rows"], n, task["name"])
            # the check can fail: the next seed's family differs on nearly every loss
            other = sf.Family.for_space(sp, task["family"].replace("seed=", "seed=1"))
            out, _ = sf.check_table(other, path)
            self.assertGreater(out["by_key"]["loss"], 0.9 * out["rows"], task["name"])
        # synth8's space has every kind the port maps: loguniform, uniform, randint and
        # choice of numbers and of strings; some configurations diverged
        self.assertEqual({k for _, k, _ in fam.params},
                         {"loguniform", "uniform", "randint", "choice"})
        with open(path) as f:
            self.assertIn(",nan,", f.read().lower())

    def test_a_configurations_curve_is_the_same_every_time(self):
        import synth_family as sf
        with open(os.path.join(SOURCE, "bench", "search", "tasks", "synth8.json")) as f:
            sp = json.load(f)
        fam = sf.Family.for_space(sp, "seed=8,noise=0.05,iters=27")
        cfg = {"lr": 1e-3, "wd": 1e-4, "dropout": 0.1, "momentum": 0.9, "depth": 3,
               "width": 128, "act": "gelu", "warmup": 0.25}
        a, b = fam.config_curve(cfg), fam.config_curve(dict(cfg))
        self.assertEqual(a, b)
        self.assertEqual(len(a[1]), 27)
        # warmup (the last parameter) sets the seconds: 1 * (1 + 0.5 (0.25 - 0.5))
        self.assertEqual(a[0][0], 0.875)
        # another momentum, another curve and another noise stream
        c = fam.config_curve(dict(cfg, momentum=0.8))
        self.assertNotEqual(a[1], c[1])


@unittest.skipUnless(HAVE_OPTUNA, "python3-optuna is not installed (apt-get install "
                     "python3-optuna)")
class SearchBench(unittest.TestCase):
    def setUp(self):
        if not os.access(TUNE, os.X_OK):
            self.skipTest(f"no tune binary at {TUNE} (build first)")
        import bench
        self.bench = bench
        self.dir = tempfile.mkdtemp(prefix="tune-sbench-")
        self.task = {"name": "synth4", "space_path": os.path.join(
            SOURCE, "bench", "search", "tasks", "synth4.json"),
            "synthetic": "seed=4,noise=0.02,cross=0.5,diverge=0.05,iters=27"}
        self.task["table_path"] = bench.make_synthetic_table(self.task, self.task["space_path"],
                                                             TUNE, self.dir, rows=60)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_optuna_replay_keeps_w_workers_busy_and_stops_at_the_budget(self):
        b = self.bench
        table = b.Table(self.task["table_path"], b.Space(self.task["space_path"]))
        self.assertEqual(len(table.configs), 60)
        workers, budget = 3, 12 * table.t_full / 3
        r = b.OptunaReplay(table, 5, workers, budget, {})
        events, n = r.run()
        self.assertGreater(n, 3 * workers)
        self.assertEqual(len(r.trace), n)
        # at no moment more than W trials hold a worker, and W do at the start
        edges = sorted([(s, 1) for _, s, _ in r.trace] + [(e, -1) for _, _, e in r.trace],
                       key=lambda x: (x[0], x[1]))
        now = peak = 0
        for _, d in edges:
            now += d
            peak = max(peak, now)
        self.assertEqual(peak, workers)
        self.assertEqual(sum(1 for _, s, _ in r.trace if s == 0), workers)
        # every later start takes the worker an ended trial freed at that very moment
        ends = sorted(e for _, _, e in r.trace)
        for no, s, _ in r.trace:
            if s > 0:
                self.assertIn(s, ends, f"trial {no} started at {s} with no worker freed then")
        # results arrive on the table's clock, none after the budget
        self.assertTrue(r.results)
        self.assertLessEqual(max(t for t, _, _ in r.results), budget)
        start = {no: s for no, s, _ in r.trace}
        for t, no, k in r.results:
            times = table.times[r.rows[no]]
            self.assertAlmostEqual(t, start[no] + b.START_DELAY + sum(times[:k]), places=9)
        # a pruned trial frees its worker stop_delay after its last result
        self.assertTrue(r.pruned)
        last = {}
        for t, no, k in r.results:
            last[no] = t
        for no, s, e in r.trace:
            if no in r.pruned:
                self.assertAlmostEqual(e, last[no] + b.STOP_DELAY, places=9)
        # the full-budget events are exactly the results at max_t
        self.assertEqual(len(events), sum(1 for _, _, k in r.results if k == table.max_t))
        # the nearest-row rule: a configuration equal to a row is answered by that row
        self.assertEqual(table.nearest(table.configs[17]), 17)

    def test_optuna_replay_under_the_pool_protocol_trains_each_row_at_most_once(self):
        b = self.bench
        table = b.Table(self.task["table_path"], b.Space(self.task["space_path"]))
        # a budget that outlasts the pool: the run ends when the 60 rows are taken and done
        r = b.OptunaReplay(table, 3, 4, 1e9, {}, pool=True)
        events, n = r.run()
        self.assertEqual(n, 60)
        self.assertEqual(sorted(r.rows.values()), list(range(60)))
        trials = r.study.get_trials(deepcopy=False)
        fail = r.optuna.trial.TrialState.FAIL
        for no, row in r.rows.items():
            # Optuna is told the configuration that was trained, not its proposal
            self.assertEqual(trials[r.numbers[no]].params, table.configs[row], no)
            self.assertNotEqual(trials[r.numbers[no]].state, fail, no)
        # each proposal that no row equals left one FAIL trial behind, and only those
        moved = sum(1 for no in r.rows if r.proposals[no] != table.configs[r.rows[no]])
        self.assertGreater(moved, 0)
        self.assertEqual(sum(1 for t in trials if t.state == fail), moved)
        # the proposal was answered by the nearest row among those not yet taken
        taken = np.zeros(60, dtype=bool)
        for no in sorted(r.rows):
            self.assertEqual(table.nearest(r.proposals[no], taken), r.rows[no], no)
            taken[r.rows[no]] = True
        self.assertIsNone(table.nearest(table.configs[0], taken))
        self.assertEqual(len(r.trace), 60)

    def test_tune_runs_under_the_pool_protocol_take_each_row_at_most_once(self):
        b = self.bench
        if not b.tune_has_pool(TUNE):
            self.skipTest(f"{TUNE} has no `tune simulate --pool` yet")
        import runs
        table = b.Table(self.task["table_path"], b.Space(self.task["space_path"]))
        for method in b.TUNE_METHODS:
            d = tempfile.mkdtemp(dir=self.dir)
            # a budget that outlasts the pool of 60 rows
            sp, args = runs.tune_space(self.task["space_path"], self.task["table_path"],
                                       method, 7, 3, 1e6, table.min_iter, "t.db", pool=True)
            self.assertEqual(args[-1], "--pool")
            with open(os.path.join(d, "space.json"), "w") as f:
                json.dump(sp, f)
            b._run([TUNE] + args, d)
            con = sqlite3.connect(os.path.join(d, "t.db"))
            try:
                rows = [r[0] for r in con.execute(
                    "SELECT exec_id FROM trials WHERE started_at IS NOT NULL")]
                dist = {r[0] for r in con.execute("SELECT node FROM trials")}
            finally:
                con.close()
            self.assertEqual(len(rows), 60, method)
            self.assertEqual(len(set(rows)), 60, method)
            self.assertEqual(dist, {"d=0"}, method)

    def test_optuna_replay_on_the_family_answers_each_trial_with_its_own_curve(self):
        b = self.bench
        import runs
        task = next(t for t in runs.TASKS if t["name"] == "synth8-family")
        ft = b.FamilyTask(os.path.join(SOURCE, "bench", "search", task["space"]),
                          task["family"], n=500)
        self.assertEqual((ft.t_full, ft.min_iter), (27.0, 0.5))  # time 1, time_spread 1
        r = b.OptunaReplay(ft, 3, 4, 12 * ft.t_full / 4, {})
        events, n = r.run()
        self.assertGreater(n, 8)
        trials = r.study.get_trials(deepcopy=False)
        start = {no: st for no, st, _ in r.trace}
        reported = 0
        for no in start:
            tr = trials[r.numbers[no]]
            self.assertIsNone(r.rows[no])  # no row: the configuration's own curve
            secs, values = ft.family.config_curve(tr.params)
            for k, v in tr.intermediate_values.items():
                self.assertTrue(v == values[k - 1] or math.isnan(v) and math.isnan(values[k - 1]),
                                (no, k, v, values[k - 1]))
                reported += 1
        self.assertEqual(reported, len(r.results))
        for t, no, k in r.results:
            secs = ft.family.config_curve(trials[r.numbers[no]].params)[0]
            self.assertAlmostEqual(t, start[no] + b.START_DELAY + sum(secs[:k]), places=9)
        self.assertEqual(len(events), sum(1 for _, _, k in r.results if k == ft.max_t))
        # regret against the sample: 0 at and below its best, 1 at and above its median
        self.assertEqual(ft.regret(ft.best - 1), 0.0)
        self.assertEqual(ft.regret(ft.best), 0.0)
        self.assertEqual(ft.regret(ft.median), 1.0)
        self.assertAlmostEqual(ft.regret((ft.best + ft.median) / 2), 0.5)

    def test_a_family_task_runs_tune_on_the_family_and_writes_well_formed_results(self):
        b = self.bench
        import runs
        sp, args = runs.tune_space(os.path.join(SOURCE, "bench", "search", "tasks",
                                                "synth4.json"), None, "random+ASHA", 1, 4,
                                   100, 0.5, "t.db", synthetic=runs.SYNTH4)
        self.assertEqual(args, ["simulate", "space.json", "--synthetic", runs.SYNTH4,
                                "--workers", "4", "--db", "t.db", "--quiet"])
        out = os.path.join(self.dir, "fam")
        work = os.path.join(self.dir, "famwork")
        methods = ["random+ASHA", "TPE(optuna)+ASHA", "Optuna TPE+SH"]
        rc = b.main(["--tune", TUNE, "--tasks", "synth4-family", "--workers", "2",
                     "--seeds", "2", "--budget", "8", "--jobs", "1", "--out", out,
                     "--work", work, "--no-figures", "--family-sample", "3000",
                     "--methods", ",".join(methods)])
        self.assertEqual(rc, 0)
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        (cell,) = res["cells"]
        self.assertEqual((cell["task"], cell["workers"], cell["seeds"]),
                         ("synth4-family", 2, [1, 2]))
        self.assertAlmostEqual(cell["budget"], 8 * 27 / 2)
        self.assertIn("3,000 configurations", res["tasks"][0]["desc"])
        for r in cell["rows"]:
            self.assertTrue(0 <= r["final"] <= r["auc"] <= 1, r)
            self.assertGreater(r["trials"], 2)
        # something reached max_t within 8 trainings' worth of time
        self.assertTrue(any(r["final"] < 1 for r in cell["rows"]))

    def test_two_seeds_of_every_method_give_well_formed_results(self):
        b = self.bench
        out = os.path.join(self.dir, "out")
        work = os.path.join(self.dir, "work")
        os.makedirs(work)
        shutil.copy(self.task["table_path"], os.path.join(work, "synth4.csv.gz"))
        rc = b.main(["--tune", TUNE, "--tasks", "synth4", "--workers", "2", "--seeds", "2",
                     "--budget", "8", "--jobs", "1", "--out", out, "--work", work,
                     "--no-figures"])
        self.assertEqual(rc, 0)
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        (cell,) = res["cells"]
        self.assertEqual((cell["task"], cell["workers"], cell["seeds"]), ("synth4", 2, [1, 2]))
        self.assertEqual([r["method"] for r in cell["rows"]], b.METHODS)
        for r in cell["rows"]:
            for k in ("auc", "final"):
                self.assertTrue(0 <= r[k] <= 1, (r["method"], k, r[k]))
                lo, hi = r[k + "_ci"]
                self.assertTrue(lo <= r[k] + 1e-12 and r[k] <= hi + 1e-12)
            self.assertGreater(r["trials"], 2)
        runs = glob.glob(os.path.join(work, "*.json"))
        self.assertEqual(len(runs), 2 * len(b.METHODS))
        budget = cell["budget"]
        for p in runs:
            with open(p) as f:
                run = json.load(f)
            reg = run["regret"]
            self.assertEqual(len(reg), b.GRID)
            self.assertEqual(reg[0], 1.0)  # nothing reached max_t at time 0
            self.assertTrue(all(0 <= x <= 1 for x in reg))
            self.assertTrue(all(y <= x for x, y in zip(reg, reg[1:])),
                            f"{p}: the incumbent's regret went up")
        self.assertAlmostEqual(budget, 8 * res["tasks"][0]["t_full"] / 2)
        with open(os.path.join(out, "results.md")) as f:
            md = f.read()
        self.assertIn("## synth4, W = 2", md)
        for m in b.METHODS:
            self.assertIn(f"| {m} |", md)
        self.assertTrue(math.isfinite(cell["rows"][1]["vs Optuna TPE+SH"]["p"]))


if __name__ == "__main__":
    unittest.main()
