#!/usr/bin/python3
"""Runs one example of examples/ the way its README says, briefly: ctest's example.NAME
(tests/examples.cmake). Each run takes the example's own space.json with a few settings
made smaller (fewer trials, less data: OVERRIDES below, the only difference from what a
user types), in a fresh folder for the database, with `tune` on PATH as after
scripts/setup.sh and the example's folder on PATH as its README puts it. It checks that
`tune run` exits 0, that every trial reported results and none ended in ERROR, then runs
`tune best`. Exits 77 (a skip) when the example needs PyTorch and /usr/bin/python3 has none.
Usage: run_example.py NAME. Not for: checking what an example learns (tests/test_*.c do).
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SOURCE = os.environ.get("TUNE_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))
BUILD = os.environ.get("TUNE_BINARY_DIR") or os.path.join(SOURCE, "build")
BIN = os.path.join(BUILD, "bin")
SKIP = 77


def needs_torch():
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        print("skip: PyTorch does not import under /usr/bin/python3")
        sys.exit(SKIP)


def shrink(space, **keys):
    """The example's space with the test's smaller settings; "args" maps a command option
    to its new value, "extra_args" appends options."""
    s = dict(space)
    cmd = list(s["command"])
    for opt, val in keys.pop("args", {}).items():
        cmd[cmd.index(opt) + 1] = val
    cmd += keys.pop("extra_args", [])
    s["command"] = cmd
    s.update(keys)
    return s


def example(name, space_file="space.json", **overrides):
    folder = os.path.join(SOURCE, "examples", name)
    with open(os.path.join(folder, space_file)) as f:
        return folder, shrink(json.load(f), **overrides)


def run(work, space, path_dirs, cpus=2):
    """`tune run space.json` in work with path_dirs first on PATH; then checks the database."""
    sp = os.path.join(work, "space.json")
    with open(sp, "w") as f:
        json.dump(space, f, indent=1)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(path_dirs + [BIN, env.get("PATH", "/usr/bin:/bin")])
    env.pop("TUNE_DB", None)
    for argv in (["tune", "run", "space.json", "--quiet", "--cpus", str(cpus)],
                 ["tune", "best", space["name"]]):
        print("+", " ".join(argv), flush=True)
        p = subprocess.run(argv, cwd=work, env=env)
        if p.returncode != 0:
            sys.exit(f"example: `{' '.join(argv)}` exited with {p.returncode}")
    con = sqlite3.connect(os.path.join(work, "tune.db"))
    rows = con.execute("SELECT t.name, t.status, (SELECT count(*) FROM results r WHERE "
                       "r.trial_id = t.id) FROM trials t").fetchall()
    con.close()
    if len(rows) != space["num_samples"]:
        sys.exit(f"example: {len(rows)} trials recorded, {space['num_samples']} expected")
    for trial, status, n in rows:
        if status != "TERMINATED" or n == 0:
            sys.exit(f"example: {trial} is {status} with {n} results")
    print(f"example: {len(rows)} trials TERMINATED, each with results")


def fmnist_asha(work):
    # README, "The two commands": setup.sh runs `tune run examples/fmnist_asha/space.json`.
    # Four trials on the first 2,000 images instead of 32 on all 60,000.
    folder, s = example("fmnist_asha", num_samples=4,
                        extra_args=["--train-limit", "2000", "--val-limit", "500"])
    run(work, s, [])
    # The GPU variant setup.sh picks on a GPU machine: checked, not run.
    p = subprocess.run([os.path.join(BIN, "tune"), "validate",
                        os.path.join(folder, "space-gpu.json")], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"example: tune validate space-gpu.json: {p.stdout}{p.stderr}")


def pbt_toy(work):
    # examples/pbt_toy/README.md: cc -O2 -o pbt_toy pbt_toy.c; PATH=$PWD:$PATH tune run
    # space.json. Built here into the test's folder, so the checkout stays clean.
    folder, s = example("pbt_toy", args={"--iters": "16", "--sleep-ms": "5"})
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    subprocess.run([cc, "-O2", "-o", os.path.join(work, "pbt_toy"),
                    os.path.join(folder, "pbt_toy.c")], check=True)
    run(work, s, [work])
    con = sqlite3.connect(os.path.join(work, "tune.db"))
    exploits = con.execute("SELECT count(*) FROM lineage").fetchone()[0]
    con.close()
    if exploits == 0:
        sys.exit("example: PBT made no exploit in 8 trials x 16 iterations")
    print(f"example: {exploits} exploits")


def torch_resumable(work):
    # examples/torch_resumable/README.md: PATH=$PWD:$PATH tune run space.json, as it is.
    needs_torch()
    folder, s = example("torch_resumable")
    run(work, s, [folder])


def torch_ddp(work):
    # README, "Reporting from your own program": cd examples/torch_ddp && PATH=$PWD:$PATH
    # tune run space.json. One trial of two ranks instead of four.
    needs_torch()
    folder, s = example("torch_ddp", num_samples=1)
    run(work, s, [folder])


def report_helpers(work):
    # README, "Reporting from your own program": trial.c (built as its first lines say) and
    # trial.py are complete trials; each runs under tune as a command found on PATH.
    folder = os.path.join(SOURCE, "examples", "report_helpers")
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    subprocess.run([cc, "-O2", "-I", os.path.join(SOURCE, "include"), "-o",
                    os.path.join(work, "trial"), os.path.join(folder, "trial.c"), "-lm"],
                   check=True)
    for prog in ("trial", "trial.py"):
        sub = os.path.join(work, prog.replace(".", "_") + "_run")
        os.mkdir(sub)
        run(sub, {"name": "helpers", "metric": "loss", "mode": "min", "num_samples": 2,
                  "command": [prog, "--lr", "{lr}", "--iters", "5"],
                  "space": {"lr": {"loguniform": [0.001, 0.1]}}}, [work, folder])


EXAMPLES = {f.__name__: f for f in (fmnist_asha, pbt_toy, torch_resumable, torch_ddp,
                                    report_helpers)}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in EXAMPLES:
        sys.exit(f"usage: run_example.py {'|'.join(EXAMPLES)}")
    work = tempfile.mkdtemp(prefix=f"tune-example-{sys.argv[1]}-")
    try:
        EXAMPLES[sys.argv[1]](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
