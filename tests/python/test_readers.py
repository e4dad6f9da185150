"""The read-only readers against a real database written by the tune binary:
tune.Experiment (trials, results, best_trial, get_best_trial, best_config, best_result, dataframe),
tune.experiments, and their errors."""

import os
import sys
import unittest
from unittest import mock

from helpers import Case, tune
import trainables

# x in trial order; loss = x / i (i = 1..5), acc = 1 - loss.
XS = [0.4, 0.2, 0.8]


class Readers(Case):
    def setUp(self):
        super().setUp()
        tune.run(trainables.quadratic, config={"x": tune.grid_search(XS), "tag": "t"},
                 metric="loss", mode="min", name="read", storage="tune.db", verbose=0)
        self.ex = tune.Experiment("read", storage="tune.db")

    def test_trials(self):
        trials = self.ex.trials()
        self.assertEqual([t["trial"] for t in trials], ["trial_00000", "trial_00001", "trial_00002"])
        self.assertEqual([t["config"] for t in trials], [{"x": x, "tag": "t"} for x in XS])
        for t, x in zip(trials, XS):
            self.assertEqual(t["status"], "TERMINATED")
            self.assertIs(t["early_stopped"], False)
            self.assertEqual(t["iterations"], 5)
            self.assertAlmostEqual(t["last_metric"], x / 5)
            self.assertAlmostEqual(t["best_metric"], x / 5)
            self.assertEqual(t["last_result"]["training_iteration"], 5)

    def test_results(self):
        rows = self.ex.results()
        self.assertEqual(len(rows), 15)
        self.assertEqual([(r["trial_no"], r["iteration"]) for r in rows[:6]],
                         [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 1)])
        self.assertAlmostEqual(rows[1]["metric"], 0.4 / 2)
        self.assertAlmostEqual(rows[1]["acc"], 1 - 0.4 / 2)
        self.assertEqual([r["iteration"] for r in self.ex.results(trial="trial_00002")],
                         [1, 2, 3, 4, 5])
        self.assertEqual(len(self.ex.results(trial=1)), 5)

    def test_best(self):
        best = self.ex.best_trial  # a property, as Ray's
        self.assertEqual(best["trial"], "trial_00001")
        self.assertEqual(self.ex.best_config, {"x": 0.2, "tag": "t"})
        self.assertAlmostEqual(self.ex.best_result["loss"], 0.2 / 5)
        self.assertEqual(self.ex.get_best_trial(scope="all")["trial"], "trial_00001")
        # The same trial as `tune best` picks.
        import subprocess
        out = subprocess.run([os.environ["TUNE_BIN"], "best", "read", "--db", self.db],
                             capture_output=True, text=True).stdout
        self.assertIn("trial_00001", out)

    def test_best_by_max(self):
        tune.run(trainables.quadratic, config={"x": tune.grid_search(XS)}, metric="acc",
                 mode="max", name="readmax", storage="tune.db", verbose=0)
        ex = tune.Experiment("readmax", storage="tune.db")
        self.assertEqual(ex.best_trial["trial"], "trial_00001")
        self.assertEqual(ex.best_config["x"], 0.2)

    def test_dataframe_pandas(self):
        try:
            import pandas
        except ImportError:
            self.skipTest("pandas is not installed")
        df = self.ex.dataframe()
        self.assertIsInstance(df, pandas.DataFrame)
        self.assertEqual(len(df), 3)
        self.assertEqual(list(df["config/x"]), XS)
        self.assertEqual(list(df["trial"]), ["trial_00000", "trial_00001", "trial_00002"])
        self.assertAlmostEqual(df["loss"][2], 0.8 / 5)
        self.assertEqual(len(self.ex.results_dataframe()), 15)

    def test_dataframe_without_pandas(self):
        with mock.patch.dict(sys.modules, {"pandas": None}):  # import pandas then fails
            rows = self.ex.dataframe()
        self.assertIsInstance(rows, list)
        self.assertEqual([r["config/x"] for r in rows], XS)
        self.assertEqual(rows[0]["status"], "TERMINATED")

    def test_experiments(self):
        tune.run(trainables.quadratic, config={"x": 1}, name="second", storage="tune.db",
                 verbose=0)
        exps = tune.experiments("tune.db")
        self.assertEqual([e["experiment"] for e in exps], ["read", "second"])
        self.assertEqual(exps[0]["num_trials"], 3)
        self.assertEqual(exps[0]["best_trial"], "trial_00001")
        self.assertEqual(exps[0]["status"], "FINISHED")

    def test_read_only(self):
        before = os.stat(self.db).st_mtime_ns, os.path.getsize(self.db)
        self.ex.trials(), self.ex.results(), tune.experiments(self.db)
        self.assertEqual((os.stat(self.db).st_mtime_ns, os.path.getsize(self.db)), before)

    def test_errors(self):
        with self.assertRaisesRegex(tune.TuneError, "no experiment named 'nope'.*holds: read"):
            tune.Experiment("nope", storage="tune.db")
        missing = os.path.join(self.dir, "missing.db")
        with self.assertRaisesRegex(tune.TuneError, "no database at .*missing.db"):
            tune.Experiment("read", storage=missing)
        self.assertFalse(os.path.exists(missing))  # a reader never creates a database
        other = os.path.join(self.dir, "other.db")
        import sqlite3
        sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.close()
        with self.assertRaisesRegex(tune.TuneError, "is not a tune database"):
            tune.experiments(other)


if __name__ == "__main__":
    unittest.main()
