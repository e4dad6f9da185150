"""How the package installs: the tune.pth that scripts/setup.sh writes for /usr/bin/python3,
and `pip install ./python` in a virtual environment with no package index."""

import os
import shutil
import subprocess
import sys
import unittest

from helpers import PYDIR, TUNE, Case


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TUNE_BIN")}
    env.update(extra)
    return env


class Install(Case):
    def test_pth_file_makes_import_tune_work(self):
        site = os.path.join(self.dir, "site")
        p = subprocess.run([os.path.join(PYDIR, "install-pth.sh"), site], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(site, "tune.pth")) as f:
            self.assertEqual(f.read().strip(), PYDIR)
        code = (f"import site; site.addsitedir({site!r}); import tune, tune_report; "
                "print(tune.__file__); print(tune.find_binary())")
        # -S: no site-packages of this machine (a tune.pth that setup.sh wrote for another
        # checkout would win otherwise); only the site directory made here counts.
        p = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                           cwd="/", env=clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        got_file, got_bin = p.stdout.split()
        self.assertEqual(got_file, os.path.join(PYDIR, "tune", "__init__.py"))
        # From a checkout, the binary beside it is found with no TUNE_BIN.
        if os.path.realpath(os.path.dirname(TUNE)) == os.path.realpath(
                os.path.join(os.path.dirname(PYDIR), "build", "bin")):
            self.assertEqual(os.path.realpath(got_bin), os.path.realpath(TUNE))

    def test_pip_install_in_a_venv(self):
        venv = os.path.join(self.dir, "venv")
        p = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest(f"no venv module here: {p.stderr.strip()[-200:]}")
        src = os.path.join(self.dir, "src")  # a copy, so the checkout stays as it is
        shutil.copytree(PYDIR, src, ignore=shutil.ignore_patterns("__pycache__"))
        pip = [os.path.join(venv, "bin", "python"), "-m", "pip"]
        p = subprocess.run(pip + ["install", "--no-index", "--no-cache-dir", src],
                           capture_output=True, text=True, env=clean_env())
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        shutil.rmtree(src)
        code = ("import tune, tune_report; print(tune.__file__); "
                "print(tune.build_space(['true'], {'x': tune.uniform(0, 1)}, name='v')['space'])")
        p = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], cwd="/",
                           capture_output=True, text=True, env=clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(os.path.join(venv, "lib"), p.stdout)
        self.assertIn("{'x': {'uniform': [0, 1]}}", p.stdout)


if __name__ == "__main__":
    unittest.main()
