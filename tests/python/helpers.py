"""Shared set-up of the Python front end's tests: the tune binary of this build, a fresh
folder per test, `tune validate` on a generated space, and SQL on the real database.
Not for: assertions (each test states its own)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("TUNE_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TUNE_BINARY_DIR") or os.path.join(SOURCE, "build")
TUNE = os.path.join(BUILD, "bin", "tune")
PYDIR = os.path.join(SOURCE, "python")

# The package under test is the checkout's, whatever else is installed.
sys.path.insert(0, PYDIR)
sys.path.insert(0, HERE)  # trainables.py: a module the trials import by name
os.environ["TUNE_BIN"] = TUNE
os.environ["PYTHONPATH"] = HERE + os.pathsep + PYDIR

import tune  # noqa: E402,F401  (re-exported to the tests)


class Case(unittest.TestCase):
    """Each test runs in a fresh folder (the database and tune_results/ go there)."""

    def setUp(self):
        if not os.access(TUNE, os.X_OK):
            self.skipTest(f"no tune binary at {TUNE} (build first)")
        self.dir = tempfile.mkdtemp(prefix="tune-py-")
        self.old = os.getcwd()
        os.chdir(self.dir)
        self.db = os.path.join(self.dir, "tune.db")

    def tearDown(self):
        os.chdir(self.old)
        shutil.rmtree(self.dir, ignore_errors=True)

    def sql(self, query, *args):
        con = sqlite3.connect(self.db)
        try:
            return con.execute(query, args).fetchall()
        finally:
            con.close()

    def validate(self, space):
        """`tune validate` on the space as tune.run would write it: (exit status, output)."""
        path = os.path.join(self.dir, "v.space.json")
        with open(path, "w") as f:
            json.dump(space, f)
        p = subprocess.run([TUNE, "validate", path], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def assertValid(self, space):
        rc, out = self.validate(space)
        self.assertEqual(rc, 0, f"tune validate refused {json.dumps(space)}:\n{out}")
        return out


def tune_accepts(key, value, scheduler=None):
    """Whether this build's `tune validate` knows a top-level (or ASHA scheduler) key: the
    keys another change adds are tested only once the engine has them."""
    if not os.access(TUNE, os.X_OK):
        return False
    s = {"name": "probe", "metric": "m", "mode": "min", "command": ["true"],
         "scheduler": {"type": "asha"}}
    if scheduler:
        s["scheduler"][key] = value
    else:
        s[key] = value
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(s, f)
    try:
        return subprocess.run([TUNE, "validate", f.name], capture_output=True).returncode == 0
    finally:
        os.unlink(f.name)
