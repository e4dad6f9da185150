"""The search benchmark's harness (bench/search/bench.py) on a tiny synthetic task: the
Optuna replay keeps W trials running on the virtual clock and stops at the budget, each
result arrives when the table says, and a two-seed run of every method writes well-formed
results. Needs python3-optuna (skipped without it) and the tune binary of this build."""

import glob
import json
import math
import os
import shutil
import sqlite3
import sys
import tempfile
import unittest

import numpy as np

from helpers import SOURCE, TUNE

sys.path.insert(0, os.path.join(SOURCE, "bench", "search"))

try:
    import optuna  # noqa: F401
    HAVE_OPTUNA = True
except ImportError:
    HAVE_OPTUNA = False


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
