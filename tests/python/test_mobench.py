"""The multi-objective benchmark's harness (bench/mo/mo.py) on a tiny synthetic task: its
2-D hypervolume is exact (by hand, and as the engine's pareto_hypervolume when mo_hv is
built), the Optuna replay keeps W trials training to max_t without pruning and stops at
the budget, the hypervolume over time only grows and ends at the front's, and a two-seed
run of tune's MO-ASHA and Optuna's samplers writes well-formed results. Needs
python3-optuna (skipped without it) and the tune binary of this build."""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from helpers import SOURCE, TUNE

sys.path.insert(0, os.path.join(SOURCE, "bench", "mo"))

try:
    import optuna  # noqa: F401
    HAVE_OPTUNA = True
except ImportError:
    HAVE_OPTUNA = False

MO_HV = os.path.join(os.path.dirname(TUNE), "mo_hv")


@unittest.skipUnless(HAVE_OPTUNA, "python3-optuna is not installed (apt-get install "
                     "python3-optuna)")
class MoBench(unittest.TestCase):
    def setUp(self):
        if not os.access(TUNE, os.X_OK):
            self.skipTest(f"no tune binary at {TUNE} (build first)")
        import mo
        self.mo = mo
        self.dir = tempfile.mkdtemp(prefix="tune-mobench-")
        self.task = {"name": "synth", "rows": 60,
                     "space_path": os.path.join(SOURCE, "bench", "mo", "tasks", "synth.json"),
                     "synthetic": "seed=30,noise=0.02,cross=0.5,diverge=0.05,iters=27"}
        self.task["table_path"] = mo.make_synth_table(self.task, TUNE, self.dir)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_hypervolume_is_exact(self):
        hv2 = self.mo.hv2
        # three staircase steps against (1.1, 1.1): 0.9 x 0.2 + 0.6 x 0.4 + 0.2 x 0.3
        pts = [(0.5, 0.5), (0.2, 0.9), (float("nan"), 0.1), (0.9, 0.2), (0.6, 0.6), (1.2, 0.0)]
        self.assertAlmostEqual(hv2(pts), 0.48, places=15)
        self.assertEqual(hv2([]), 0.0)
        self.assertEqual(hv2([(1.1, 0.0)]), 0.0)  # not strictly better than the reference
        if not os.access(MO_HV, os.X_OK):
            self.skipTest(f"{MO_HV} is not built (cmake --build build --target mo_hv)")
        table = self.mo.MoTable(self.task["table_path"], self.task["space_path"])
        said = self.mo.check_hv(MO_HV, [table], trials=50)
        self.assertIn("equals the engine's pareto_hypervolume", said)

    def test_the_synthetic_table_has_both_objectives_at_max_t(self):
        table = self.mo.MoTable(self.task["table_path"], self.task["space_path"])
        self.assertEqual(table.objectives, ("loss", "cost"))
        self.assertEqual(len(table.t.configs), 60)
        fin = table.points[np.isfinite(table.points).all(axis=1)]
        self.assertGreater(len(fin), 40)
        self.assertTrue(((fin[:, 1] >= 0) & (fin[:, 1] <= 1)).all())
        self.assertGreater(table.hv_table, 0)

    def test_optuna_replay_trains_to_max_t_without_pruning_and_stops_at_the_budget(self):
        mo = self.mo
        table = mo.MoTable(self.task["table_path"], self.task["space_path"])
        workers, budget = 3, 12 * table.t_full / 3
        for kind in ("nsga2", "motpe"):
            r = mo.OptunaMoReplay(table, 5, workers, budget, kind)
            events, n = r.run()
            self.assertGreater(n, 3 * workers)
            self.assertEqual(len(r.trace), n)
            edges = sorted([(s, 1) for _, s, _ in r.trace] + [(e, -1) for _, _, e in r.trace])
            now = peak = 0
            for _, d in edges:
                now += d
                peak = max(peak, now)
            self.assertEqual(peak, workers)
            # every trial that ended before the budget trained its whole curve to max_t
            done = [(no, s, e) for no, s, e in r.trace if e < budget]
            self.assertGreater(len(done), workers)
            t = table.t
            by_number = {tr.number: tr for tr in r.study.trials}  # asked in trial order
            for no, s, e in done:
                row = t.nearest(by_number[no].params)
                self.assertAlmostEqual(e, s + mo.START_DELAY + sum(t.times[row][:table.max_t]),
                                       places=9)
            # Optuna was told both objectives of each finished trial, and the events are the
            # table's points
            complete = [tr for tr in r.study.trials if tr.values is not None]
            self.assertEqual(len(complete), len(events))
            for tr in complete:
                row = t.nearest(tr.params)
                self.assertEqual(list(tr.values), list(table.points[row]))
            self.assertLessEqual(max(at for at, _ in events), budget)

    def test_hypervolume_over_time_grows_to_the_front_of_what_arrived(self):
        mo = self.mo
        table = mo.MoTable(self.task["table_path"], self.task["space_path"])
        budget = 10.0
        events = [(1.0, tuple(table.points[0])), (4.0, tuple(table.points[1])),
                  (9.5, tuple(table.points[2]))]
        c = mo.hv_curve(table, events, budget)
        self.assertEqual(len(c), mo.GRID)
        self.assertEqual(c[0], 0.0)
        self.assertTrue((np.diff(c) >= 0).all())
        want = mo.hv2(table.normalise([p for _, p in events])) / table.hv_table
        self.assertAlmostEqual(c[-1], want, places=15)
        self.assertLessEqual(c[-1], 1.0 + 1e-12)

    def test_two_seeds_give_well_formed_results(self):
        out = os.path.join(self.dir, "out")
        os.makedirs(os.path.join(out, ".work"))
        shutil.copy(self.task["table_path"], os.path.join(out, ".work", "synth.csv.gz"))
        rc = self.mo.main(["--tune", TUNE, "--tasks", "synth", "--seeds", "2", "--workers", "2",
                           "--budget", "12", "--jobs", "1", "--out", out, "--no-figures",
                           "--methods", "random+MO-ASHA,Optuna NSGA-II,Optuna MOTPE"])
        self.assertEqual(rc, 0)
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        self.assertEqual(res["reference_point"], [1.1, 1.1])
        (cell,) = res["cells"]
        self.assertEqual(cell["seeds"], [1, 2])
        rows = {r["method"]: r for r in cell["rows"]}
        self.assertEqual(set(rows), {"random+MO-ASHA", "Optuna NSGA-II", "Optuna MOTPE"})
        asha = rows["random+MO-ASHA"]
        self.assertGreater(asha["points"], 0)  # MO-ASHA ran trials to max_t with both values
        self.assertGreater(asha["trials"], rows["Optuna NSGA-II"]["trials"])  # it stopped some
        for r in rows.values():
            self.assertTrue(0 <= r["final"] <= 1 + 1e-12)
        self.assertIn("vs Optuna NSGA-II", asha)
        with open(os.path.join(out, "results.md")) as f:
            md = f.read()
        self.assertIn("## synth, W = 2", md)
        self.assertIn("random+MO-ASHA vs Optuna MOTPE: median time ratio", md)


if __name__ == "__main__":
    unittest.main()
