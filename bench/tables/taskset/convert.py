#!/usr/bin/python3
"""bench/tables/taskset/convert.py: turns TaskSet's learning curves, as published in the DPL
repository (data/taskset/*.json), into tune's table format (docs/simulate.md) with a
space.json per task. Standard library only. Not for: fetching the data (give it a clone
of the DPL repository) or deciding anything about search (bench/search/).

usage: convert.py [--dpl REPO] [--holdout] [--check] [--out DIR]

  --dpl REPO  a clone (bare or not) of github.com/machinelearningnuremberg/DPL; read at
              the pinned commit with `git show` (default: $DPL_REPO, else this project's
              mirror at /work/.mirror/machinelearningnuremberg+DPL/repo)
  --holdout   convert the six held-out tasks into DIR/holdout/ instead of the six tuned on
  --check     write nothing: compare what the conversion makes with the files in DIR
              (the decompressed CSV and the space.json), exit 1 on any difference
  --out DIR   where the tables go (default: this folder)

Exit status: 0 done (or --check found no difference), 1 --check found a difference,
2 a bad command line, a source whose sha256 is not the pinned one, or a value outside
TaskSet's bounds, 77 (with --check) no DPL repository to read.

What the conversion does, and why, is in README.md here: evaluation 0 (the untrained
model, step 0) is left out, so training_iteration k is TaskSet's step 200 k (k = 1..50);
a NaN (a run whose mean over the 5 replicas diverged) is written `nan`, as tune writes a
diverged trial's value; every iteration takes 1 s (TaskSet records no time, and the cost
of an iteration does not depend on Adam's hyperparameters)."""

import argparse
import gzip
import hashlib
import io
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DPL_URL = "https://github.com/machinelearningnuremberg/DPL"
DPL_COMMIT = "de44b74030a7d4bb37467add431e6fac19cd357a"
DEFAULT_MIRROR = "/work/.mirror/machinelearningnuremberg+DPL/repo"
PREFIX = "FixedTextRNNClassification_imdb_"

# The six tasks tuned on, and the six kept aside to check the result (issue 29): each with
# its short name in bench/search and the sha256 of its source file at DPL_COMMIT, so that a
# different file is refused rather than converted.
TUNED = {
    "patch128_LSTM128_avg_bs64":
        ("ts_p128_lstm128_avg",
         "5f5a332e45231a5639d43ff35ffac6bba28836593953a428dc0b508f8d4ea264"),
    "patch128_LSTM128_embed128_bs64":
        ("ts_p128_lstm128_embed128",
         "cf04eeed0cf4f4950666841756d9988d4d529c8aebd433c0303464cfec5a4e2d"),
    "patch32_GRU64_avg_bs128":
        ("ts_p32_gru64_avg",
         "d3650db950bf292d52972db69fe3bfd7d2588d68b7b40f5c496977e8ebab11bc"),
    "patch32_IRNN64_relu_last_bs128":
        ("ts_p32_irnn64_relu_last",
         "2e82adc0fed36722e6ef38e4a3ab54d77e8495ce7482f35389000e29da5ac010"),
    "patch32_LSTM128_bs128":
        ("ts_p32_lstm128",
         "08a52b1102b6b010ece9fa5549b2b16b0e782aca3fbd8119b4c0447fa9d72558"),
    "patch32_VRNN64_tanh_avg_bs128":
        ("ts_p32_vrnn64_tanh_avg",
         "b81762ce3cc0e56e0146853abc809189a3eff1c756cf7a9c4bdb1f64c79084c5"),
}
HOLDOUT = {
    "patch128_LSTM128_bs64":
        ("ts_p128_lstm128",
         "c52d49dfb308cfca66c02f67f89aa880ccb9f04c38ace31e18db1e58898e8c03"),
    "patch32_GRU128_bs128":
        ("ts_p32_gru128",
         "3f72bcc5688c429e8b204029afa8a115a1233d304808efbc6290fcc6d530551c"),
    "patch32_IRNN64_relu_avg_bs128":
        ("ts_p32_irnn64_relu_avg",
         "5ae8c7fbea5f4fa5a63920767be50467bcf1647421d8b64595a5420fc1c4b7b2"),
    "patch32_LSTM128_E128_bs128":
        ("ts_p32_lstm128_e128",
         "11891b4d02be630145f4ff6537bc77c2d83f517a448f1bd3c181fa67ebc59c07"),
    "patch32_VRNN128_tanh_bs128":
        ("ts_p32_vrnn128_tanh",
         "838d8716451d0ce1626450739d68d3e26561f0b5891bd939e07a7bf2e438eb2b"),
    "patch32_VRNN64_relu_avg_bs128":
        ("ts_p32_vrnn64_relu_avg",
         "e48a689597342aec59c60ed94f58cff5d874bff581642f7f6662fea874b1b1b1"),
}

# TaskSet's adam8p search space ("adam8p_wide_grid"): every hyperparameter log-uniform, the
# bounds of sample_adam8p_wide_grid in google-research's task_set/optimizers/adam8p.py
# (beta1 and beta2 are drawn as 1 - a log-uniform value, so the space is over 1 - beta;
# exponential_decay is drawn as sample_log_float(rng, 1e-3, 1e-6), the same interval).
# (name in the table, key in DPL's "hp", low, high, whether the table holds 1 - value)
PARAMS = [
    ("learning_rate", "learning_rate", 1e-8, 1e1, False),
    ("one_minus_beta1", "beta1", 1e-4, 1e0, True),
    ("one_minus_beta2", "beta2", 1e-6, 1e0, True),
    ("epsilon", "epsilon", 1e-10, 1e3, False),
    ("l1", "l1", 1e-8, 1e1, False),
    ("l2", "l2", 1e-8, 1e1, False),
    ("linear_decay", "linear_decay", 1e-7, 1e-4, False),
    ("exponential_decay", "exponential_decay", 1e-6, 1e-3, False),
]
EVALS = 51  # steps 0, 200, ..., 10,000
STEP = 200
SECONDS_PER_ITER = 1.0
METRICS = [("valid_loss", "valid"), ("train_loss", "train"), ("test_loss", "test")]


class Refused(Exception):
    """A source the conversion will not turn into a table (exit status 2)."""


def num(x):
    """The shortest text that reads back as exactly x (Python's repr); `nan` for NaN and
    for an infinity, which is a diverged run as much as a NaN is (TaskSet's files hold
    only NaN: README.md)."""
    if not math.isfinite(x):
        return "nan"
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") and "e" not in r else r


def read_source(repo, task):
    """The bytes of data/taskset/<task>.json at DPL_COMMIT in the clone `repo`."""
    path = f"data/taskset/{PREFIX}{task}.json"
    p = subprocess.run(["git", "-C", repo, "show", f"{DPL_COMMIT}:{path}"],
                       capture_output=True)
    if p.returncode != 0:
        raise Refused(f"{repo}: cannot read {path} at {DPL_COMMIT[:7]}: "
                      f"{p.stderr.decode(errors='replace').strip()} (is it a clone of "
                      f"{DPL_URL}, fetched past that commit?)")
    return p.stdout


def convert(task, data, sha):
    """(CSV text, space.json text, counts) for one task from its source bytes."""
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        raise Refused(f"{PREFIX}{task}.json: sha256 {got}, not the pinned {sha}: a different "
                      "file than the one the committed tables were made from")
    entries = json.loads(data)
    short = (TUNED.get(task) or HOLDOUT[task])[0]
    head = (["trial"] + [f"config/{p[0]}" for p in PARAMS] +
            ["training_iteration", "time_this_iter_s", "step"] + [m for m, _ in METRICS])
    out = io.StringIO()
    out.write(",".join(head) + "\n")
    counts = {"configurations": len(entries), "nan_curves": 0, "nan_values": 0,
              "nan_at_step0": 0}
    for i, e in enumerate(entries):
        cfg = []
        for name, key, lo, hi, flip in PARAMS:
            v = e["hp"][key]
            if flip:
                v = 1.0 - v
            # TaskSet drew 1 - beta and stored beta, so 1 - beta can round a hair past a
            # bound; none of DPL's files does, and one that did is refused, not clamped.
            if not lo <= v <= hi:
                raise Refused(f"{PREFIX}{task}.json: configuration {i}: {name} = {v!r} is "
                              f"outside TaskSet's bounds [{lo:g}, {hi:g}]")
            cfg.append(num(v))
        curves = []
        for _, k in METRICS:
            c = e[k]["loss"]
            if len(c) != EVALS:
                raise Refused(f"{PREFIX}{task}.json: configuration {i}: {k} has {len(c)} "
                              f"evaluations, not {EVALS} (steps 0 to 10,000 every 200)")
            curves.append(c)
        valid = curves[0]
        bad = sum(1 for x in valid[1:] if not math.isfinite(x))
        counts["nan_values"] += bad
        counts["nan_curves"] += bad > 0
        counts["nan_at_step0"] += not math.isfinite(valid[0])
        prefix = f"c{i:04d}," + ",".join(cfg) + ","
        for k in range(1, EVALS):  # evaluation 0 is the untrained model: left out
            out.write(prefix + f"{k},{num(SECONDS_PER_ITER)},{k * STEP}," +
                      ",".join(num(c[k]) for c in curves) + "\n")
    space = {
        "name": "taskset-" + short[len("ts_"):],
        "metric": "valid_loss", "mode": "min",
        "num_samples": 200, "max_concurrent": 4, "seed": 1,
        "command": ["unused-in-simulation"],
        "scheduler": {"type": "asha", "max_t": EVALS - 1, "grace_period": 1,
                      "reduction_factor": 3},
        "space": {name: {"loguniform": [lo, hi]} for name, _, lo, hi, _ in PARAMS},
    }
    return out.getvalue(), space_text(space), counts


def space_text(space):
    """space.json as the other tables' are laid out: one parameter a line."""
    lines = ["{"]
    top = [k for k in space if k != "space"]
    for k in top:
        lines.append(f"  {json.dumps(k)}: {json.dumps(space[k])},")
    lines.append('  "space": {')
    ps = list(space["space"].items())
    for j, (k, v) in enumerate(ps):
        lo, hi = v["loguniform"]
        lines.append(f'    {json.dumps(k)}: {{"loguniform": [{lo:g}, {hi:g}]}}' +
                     ("," if j + 1 < len(ps) else ""))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def gz(text):
    """gzip -9 of the text with no name and time in its header, so the bytes depend only on
    the text (and zlib's version)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as f:
        f.write(text.encode())
    return buf.getvalue()


def write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def default_repo():
    return os.environ.get("DPL_REPO") or DEFAULT_MIRROR


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dpl", default=default_repo())
    ap.add_argument("--holdout", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--out", default=HERE)
    a = ap.parse_args(argv)
    tasks = HOLDOUT if a.holdout else TUNED
    out = os.path.join(a.out, "holdout") if a.holdout else a.out
    if not os.path.isdir(a.dpl):
        print(f"convert: no DPL repository at {a.dpl}: clone {DPL_URL} and pass --dpl PATH "
              "(or set DPL_REPO)", file=sys.stderr)
        return 77 if a.check else 2
    differ = 0
    try:
        for task, (short, sha) in tasks.items():
            name = PREFIX + task
            csv_text, space, counts = convert(task, read_source(a.dpl, task), sha)
            csv_path = os.path.join(out, name + ".csv.gz")
            space_path = os.path.join(out, name + ".space.json")
            if a.check:
                same = (os.path.exists(csv_path) and os.path.exists(space_path) and
                        gzip.open(csv_path, "rt", newline="").read() == csv_text and
                        open(space_path).read() == space)
                differ += not same
                print(f"{name}: {'same' if same else 'DIFFERS from the conversion'}")
                continue
            os.makedirs(out, exist_ok=True)
            write(csv_path, gz(csv_text))
            write(space_path, space.encode())
            print(f"{name} ({short}): {counts['configurations']} configurations, "
                  f"{counts['nan_curves']} with NaN from some step on "
                  f"({counts['nan_values']} NaN values of valid_loss), "
                  f"{os.path.getsize(csv_path)} bytes")
    except Refused as e:
        print(f"convert: {e}", file=sys.stderr)
        return 2
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
