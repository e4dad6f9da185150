"""tune.report and the trial-side helpers: the result line (the one python/tune_report.py
writes), Ray 2's dict form, get_checkpoint/get_trial_dir, and python -m tune.trial."""

import contextlib
import io
import json
import os
import subprocess
import sys
import unittest
from unittest import mock

from helpers import HERE, PYDIR, Case, tune
import tune_report


def lines(fn):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn()
    return out.getvalue().splitlines()


class Report(Case):
    def test_line_format_is_tune_reports(self):
        got = lines(lambda: tune.report(loss=float("nan"), acc=0.5, n=3, name="a"))
        want = lines(lambda: tune_report.report(loss=float("nan"), acc=0.5, n=3, name="a"))
        self.assertEqual(got, want)
        self.assertEqual(json.loads(got[0]), {"loss": None, "acc": 0.5, "n": 3, "name": "a"})

    def test_dict_form(self):
        got = lines(lambda: tune.report({"loss": 1.5}, epoch=2))
        self.assertEqual(json.loads(got[0]), {"loss": 1.5, "epoch": 2})
        with self.assertRaisesRegex(TypeError, "loss given twice"):
            tune.report({"loss": 1}, loss=2)
        with self.assertRaisesRegex(TypeError, "keywords or one dict"):
            tune.report([1, 2])

    def test_checkpoint_goes_to_the_helper(self):
        seen = {}

        def helper(checkpoint=None, **kw):  # the helper with checkpoint= (issue 13)
            seen.update(kw, checkpoint=checkpoint)
            return True
        with mock.patch.object(tune._line, "report", helper):
            self.assertTrue(tune.report(loss=1.0, checkpoint="ckpt.pt"))
        self.assertEqual(seen, {"loss": 1.0, "checkpoint": "ckpt.pt"})

    def test_checkpoint_needs_a_helper_that_knows_it(self):
        def old_helper(**metrics):
            return True
        with mock.patch.object(tune._line, "report", old_helper):
            with self.assertRaisesRegex(TypeError, "needs a tune_report.py that knows checkpoints"):
                tune.report(loss=1.0, checkpoint="ckpt.pt")
            self.assertTrue(tune.report(loss=1.0))

    def test_only_rank_zero_writes(self):
        with mock.patch.dict(os.environ, {"RANK": "1"}):
            self.assertEqual(lines(lambda: tune.report(loss=1.0)), [])

    def test_trial_context(self):
        env = {k: v for k, v in os.environ.items()
               if k not in ("TUNE_RESUME_FROM", "TUNE_TRIAL_DIR", "TUNE_TRIAL_ID")}
        with mock.patch.dict(os.environ, env, clear=True):
            self.assertIsNone(tune.get_checkpoint())
            self.assertIsNone(tune.get_trial_dir())
        with mock.patch.dict(os.environ, {"TUNE_RESUME_FROM": "/d/checkpoint",
                                          "TUNE_TRIAL_DIR": "/d", "TUNE_TRIAL_ID": "7"}):
            self.assertEqual(tune.get_checkpoint(), "/d/checkpoint")
            self.assertEqual(tune.get_trial_dir(), "/d")
            self.assertEqual(tune.get_trial_id(), "7")

    def test_trial_module(self):
        env = dict(os.environ, TUNE_CONFIG=json.dumps({"x": 2.0}), PYTHONPATH=PYDIR)
        run = lambda *a: subprocess.run([sys.executable, "-m", "tune.trial", *a], env=env,
                                        capture_output=True, text=True, cwd=self.dir)
        p = run("trainables:quadratic", "--path", HERE)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([json.loads(l)["loss"] for l in p.stdout.splitlines()],
                         [2.0, 1.0, 2.0 / 3, 0.5, 0.4])
        p = run("trainables:fails", "--path", HERE)
        self.assertEqual(p.returncode, 1)
        self.assertIn("ValueError: boom 2.0", p.stderr)
        p = run("trainables:nothing", "--path", HERE)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("trainables has no nothing", p.stderr)
        p = run(os.path.join(self.dir, "gone.py") + ":train")
        self.assertIn("does not exist", p.stderr)
        del env["TUNE_CONFIG"]
        p = run("trainables:quadratic", "--path", HERE)
        self.assertIn("TUNE_CONFIG is not set", p.stderr)


if __name__ == "__main__":
    unittest.main()
