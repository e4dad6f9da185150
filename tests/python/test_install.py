"""How tune installs: scripts/install.sh (run by scripts/setup.sh), which links tune onto
PATH and writes the tune.pth for /usr/bin/python3, and takes both back; its refusal to
repoint another checkout's; `cmake --install`; and `pip install ./python` in a virtual
environment with no package index, with --no-index and without. Every install goes into
folders made here, never the machine's own."""

import json
import os
import shutil
import subprocess
import sys
import unittest

from helpers import BUILD, PYDIR, SOURCE, TUNE, Case


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

    def install(self, *args, **env):
        """scripts/install.sh into this test's prefix and site directory."""
        e = clean_env(TUNE_PREFIX=os.path.join(self.dir, "prefix"),
                      TUNE_SITE_DIR=os.path.join(self.dir, "site"), **env)
        p = subprocess.run([os.path.join(SOURCE, "scripts", "install.sh"), *args],
                           capture_output=True, text=True, env=e)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout + p.stderr

    def test_install_puts_tune_on_path_and_the_readme_commands_work(self):
        if os.path.realpath(os.path.dirname(TUNE)) != os.path.realpath(os.path.join(BUILD, "bin")):
            self.skipTest("TUNE_BIN is not this build's")
        out = self.install()
        bindir = os.path.join(self.dir, "prefix", "bin")
        for prog in ("tune", "tune-train"):
            link = os.path.join(bindir, prog)
            self.assertEqual(os.readlink(link), os.path.join(SOURCE, "build", "bin", prog))
            self.assertIn(f"{link} -> ", out)
        # The README's "Using it", typed in a project folder with only that bin/ and the
        # system's folders on PATH; tune-train is found beside tune's real path.
        proj = os.path.join(self.dir, "project")
        os.mkdir(proj)
        with open(os.path.join(proj, "space.json"), "w") as f:
            json.dump({"name": "first", "metric": "val_loss", "mode": "min", "num_samples": 2,
                       "command": ["tune-train", "--epochs", "2", "--lr", "{lr}",
                                   "--train-limit", "500", "--val-limit", "200"],
                       "space": {"lr": {"loguniform": [0.01, 0.1]}}}, f)
        env = clean_env(PATH=bindir + ":/usr/bin:/bin")
        env.pop("TUNE_DB", None)
        for cmd in ("tune validate space.json", "tune run space.json --quiet", "tune ls",
                    "tune trials", "tune best", "tune best first --json"):
            p = subprocess.run(cmd.split(), cwd=proj, env=env, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, f"{cmd}: {p.stdout}{p.stderr}")
        self.assertTrue(os.path.exists(os.path.join(proj, "tune.db")))
        # And it is taken back: only what names this checkout.
        out = self.install("--uninstall")
        self.assertEqual(os.listdir(bindir), [])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "site", "tune.pth")))
        self.assertIn("removed", out)

    def test_install_leaves_another_checkouts_install_alone_and_says_so(self):
        other = os.path.join(self.dir, "other")
        os.makedirs(os.path.join(other, "python", "tune"))
        os.makedirs(os.path.join(other, "build", "bin"))
        open(os.path.join(other, "python", "tune", "__init__.py"), "w").close()
        open(os.path.join(other, "build", "bin", "tune"), "w").close()
        bindir, site = os.path.join(self.dir, "prefix", "bin"), os.path.join(self.dir, "site")
        os.makedirs(bindir)
        os.makedirs(site)
        theirs = os.path.join(other, "build", "bin", "tune")
        os.symlink(theirs, os.path.join(bindir, "tune"))
        with open(os.path.join(site, "tune.pth"), "w") as f:
            f.write(os.path.join(other, "python") + "\n")
        out = self.install()
        self.assertEqual(os.readlink(os.path.join(bindir, "tune")), theirs)
        with open(os.path.join(site, "tune.pth")) as f:
            self.assertEqual(f.read().strip(), os.path.join(other, "python"))
        self.assertIn(f"a link to {theirs}", out)
        self.assertIn("names another checkout", out)
        self.assertIn("TUNE_REPLACE=1", out)
        # Asked to, it repoints both and says what each named before.
        out = self.install(TUNE_REPLACE="1")
        self.assertEqual(os.readlink(os.path.join(bindir, "tune")),
                         os.path.join(SOURCE, "build", "bin", "tune"))
        with open(os.path.join(site, "tune.pth")) as f:
            self.assertEqual(f.read().strip(), PYDIR)
        self.assertIn(f"it was -> {theirs}", out)
        self.assertIn(f"it named {os.path.join(other, 'python')}", out)
        # --uninstall of the other checkout's would leave this one's alone.
        p = subprocess.run([os.path.join(PYDIR, "install-pth.sh"), "--uninstall", site],
                           capture_output=True, text=True, env=clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(site, "tune.pth")))

    def test_cmake_install_copies_the_programs(self):
        cmake = shutil.which("cmake")
        if not cmake or not os.path.exists(os.path.join(BUILD, "cmake_install.cmake")):
            self.skipTest("no cmake, or no build tree to install from")
        prefix = os.path.join(self.dir, "prefix")
        p = subprocess.run([cmake, "--install", BUILD, "--prefix", prefix],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for prog in ("tune", "tune-train"):
            self.assertTrue(os.access(os.path.join(prefix, "bin", prog), os.X_OK), prog)
        # The installed tune finds the installed tune-train beside it.
        p = subprocess.run([os.path.join(prefix, "bin", "tune"), "validate",
                            os.path.join(SOURCE, "examples", "fmnist_asha", "space.json")],
                           capture_output=True, text=True, env=clean_env(PATH="/usr/bin:/bin"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_pip_install_needs_no_index(self):
        """Plain `pip install ./python` (no --no-index): the build needs nothing from an
        index, so an index that cannot be reached changes nothing. The installed package's
        tune.run then finds tune on PATH and runs its trials under the venv's Python."""
        venv = os.path.join(self.dir, "venv")
        p = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest(f"no venv module here: {p.stderr.strip()[-200:]}")
        env = clean_env(PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0",
                        PIP_TIMEOUT="1", PIP_NO_CACHE_DIR="1")
        env.pop("PIP_NO_INDEX", None)
        p = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", PYDIR],
                           capture_output=True, text=True, env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import tune; print(tune.__file__)"], cwd="/", capture_output=True,
                           text=True, env=clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith(os.path.join(venv, "lib")), p.stdout)
        # tune.run from the installed package finds tune on PATH (where setup links it) and
        # runs the function's trials under the venv's Python.
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(bindir)
        os.symlink(TUNE, os.path.join(bindir, "tune"))
        script = os.path.join(self.dir, "exp.py")
        with open(script, "w") as f:
            f.write("import sys, tune\n"
                    "def train(config):\n"
                    "    assert sys.prefix != sys.base_prefix, 'trial not in the venv'\n"
                    "    for i in range(3):\n"
                    "        tune.report(loss=config['x'] / (i + 1))\n"
                    "if __name__ == '__main__':\n"
                    "    print('BINARY', tune.find_binary())\n"
                    "    a = tune.run(train, config={'x': tune.uniform(0, 1)}, num_samples=2,\n"
                    "                 metric='loss', mode='min', name='v', verbose=0)\n"
                    "    print('BEST', a.best_result['loss'])\n")
        p = subprocess.run([os.path.join(venv, "bin", "python"), script], cwd=self.dir,
                           capture_output=True, text=True,
                           env=clean_env(PATH=bindir + ":/usr/bin:/bin"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"BINARY {os.path.join(bindir, 'tune')}", p.stdout)
        self.assertIn("BEST ", p.stdout)

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
