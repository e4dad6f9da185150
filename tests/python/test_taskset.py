"""The TaskSet tables of bench/tables/taskset/: each committed table is exactly what
convert.py makes from DPL's files (skipped where no clone of DPL is found: CI has none),
has the layout its README states, and replays in `tune simulate` with its own space.json
(this part needs no clone)."""

import csv
import gzip
import importlib.util
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from helpers import SOURCE, TUNE

HERE = os.path.join(SOURCE, "bench", "tables", "taskset")


def load_convert():
    spec = importlib.util.spec_from_file_location("taskset_convert",
                                                  os.path.join(HERE, "convert.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class TaskSetTables(unittest.TestCase):
    def setUp(self):
        self.conv = load_convert()
        self.names = [self.conv.PREFIX + t for t in self.conv.TUNED]
        self.dir = tempfile.mkdtemp(prefix="tune-taskset-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_committed_tables_are_what_the_converter_makes(self):
        repo = self.conv.default_repo()
        if not os.path.isdir(repo) or shutil.which("git") is None:
            self.skipTest(f"no clone of DPL at {repo} (set DPL_REPO to one)")
        for task, (_, sha) in self.conv.TUNED.items():
            name = self.conv.PREFIX + task
            csv_text, space, counts = self.conv.convert(task,
                                                        self.conv.read_source(repo, task), sha)
            with gzip.open(os.path.join(HERE, name + ".csv.gz"), "rt", newline="") as f:
                committed = f.read()
            with open(os.path.join(HERE, name + ".space.json")) as f:
                committed_space = f.read()
            self.assertEqual(counts["configurations"], 1000, name)
            # compared line by line so that a difference names its line, not 60 MB of text
            got, want = committed.split("\n"), csv_text.split("\n")
            self.assertEqual(len(got), len(want), f"{name}.csv.gz: line count")
            for i, (a, b) in enumerate(zip(got, want)):
                if a != b:
                    self.fail(f"{name}.csv.gz:{i + 1}: committed {a!r}, the converter makes {b!r}")
            self.assertEqual(committed_space, space, f"{name}.space.json")

    def test_each_committed_table_has_the_stated_layout(self):
        params = [p[0] for p in self.conv.PARAMS]
        for name in self.names:
            with gzip.open(os.path.join(HERE, name + ".csv.gz"), "rt", newline="") as f:
                rows = csv.reader(f)
                head = next(rows)
                self.assertEqual(head, ["trial"] + [f"config/{p}" for p in params] +
                                 ["training_iteration", "time_this_iter_s", "step",
                                  "valid_loss", "train_loss", "test_loss"], name)
                col = {c: i for i, c in enumerate(head)}
                iters = {}
                for r in rows:
                    t = r[col["trial"]]
                    k = int(r[col["training_iteration"]])
                    self.assertEqual(k, len(iters.setdefault(t, [])) + 1, f"{name} {t}")
                    iters[t].append(k)
                    self.assertEqual(int(r[col["step"]]), 200 * k)
                    self.assertEqual(float(r[col["time_this_iter_s"]]), 1.0)
                    for p, (_, _, lo, hi, _) in zip(params, self.conv.PARAMS):
                        self.assertTrue(lo <= float(r[col[f"config/{p}"]]) <= hi, (name, t, p))
            self.assertEqual(sorted(iters), [f"c{i:04d}" for i in range(1000)], name)
            self.assertTrue(all(len(v) == 50 for v in iters.values()), name)

    def test_each_committed_table_replays_in_tune_simulate(self):
        if not os.access(TUNE, os.X_OK):
            self.skipTest(f"no tune binary at {TUNE} (build first)")
        for name in self.names:
            space = os.path.join(HERE, name + ".space.json")
            table = os.path.join(HERE, name + ".csv.gz")
            p = subprocess.run([TUNE, "validate", space], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, f"tune validate {name}:\n{p.stdout}{p.stderr}")
            db = os.path.join(self.dir, name + ".db")
            p = subprocess.run([TUNE, "simulate", space, "--table", table, "--db", db,
                                "--quiet"], capture_output=True, text=True, cwd=self.dir)
            self.assertEqual(p.returncode, 0, f"tune simulate {name}:\n{p.stdout}{p.stderr}")
            # max_t is the curves' end: no trial runs out of curve
            self.assertNotIn("ran out of recorded curve", p.stderr, name)
            con = sqlite3.connect(db)
            try:
                status = dict(con.execute("SELECT status, count(*) FROM trials GROUP BY 1"))
                rows = [r[0] for r in con.execute("SELECT exec_id FROM trials")]
                top = con.execute("SELECT max(iteration) FROM results").fetchone()[0]
            finally:
                con.close()
            self.assertEqual(status, {"TERMINATED": 200}, name)
            self.assertTrue(all(r and r[0] == "c" and len(r) == 5 for r in rows), rows[:5])
            self.assertEqual(top, 50, name)


if __name__ == "__main__":
    unittest.main()
