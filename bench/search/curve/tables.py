"""bench/search/curve/tables.py: the learning-curve tables the curve prototype replays, as
plain arrays: X (configurations scaled to [0, 1], log scale for log parameters), Y (one
validation loss per configuration and iteration; NaN where the run diverged). Not for:
tune's own table reader (sim/) or the converted TaskSet tables (bench/tables/taskset/).

TaskSet (Metz et al. 2020) curves come from the DPL repository (Apache-2.0), read from its
bare git mirror; evaluation 0 (the untrained model, the same for every configuration up
to noise) is dropped, so iteration k is evaluation k (200 k steps) and max_t = 50."""
import gzip
import csv
import json
import os
import subprocess

import numpy as np

DPL = "/work/.mirror/machinelearningnuremberg+DPL/repo"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CACHE = os.path.join(HERE, ".cache")

TASKSET = [  # the six tuning tasks of issue 29; the other six are kept aside
    "FixedTextRNNClassification_imdb_patch128_LSTM128_avg_bs64",
    "FixedTextRNNClassification_imdb_patch128_LSTM128_embed128_bs64",
    "FixedTextRNNClassification_imdb_patch32_GRU64_avg_bs128",
    "FixedTextRNNClassification_imdb_patch32_IRNN64_relu_last_bs128",
    "FixedTextRNNClassification_imdb_patch32_LSTM128_bs128",
    "FixedTextRNNClassification_imdb_patch32_VRNN64_tanh_avg_bs128",
]
SHORT = {t: t.replace("FixedTextRNNClassification_imdb_", "") for t in TASKSET}

# TaskSet's Adam parameters, all sampled log-uniformly (beta1 and beta2 as 1 - beta)
TS_HP = ["learning_rate", "beta1", "beta2", "epsilon", "l1", "l2", "linear_decay",
         "exponential_decay"]


def _scale(cols):
    X = np.array(cols, dtype=float).T
    lo, hi = X.min(axis=0), X.max(axis=0)
    return (X - lo) / np.where(hi > lo, hi - lo, 1.0)


def load_taskset(name):
    os.makedirs(CACHE, exist_ok=True)
    npz = os.path.join(CACHE, name + ".npz")
    if not os.path.exists(npz):
        raw = subprocess.run(["git", "-C", DPL, "show", f"HEAD:data/taskset/{name}.json"],
                             check=True, capture_output=True).stdout
        rows = json.loads(raw)
        cols = []
        for h in TS_HP:
            v = np.array([r["hp"][h] for r in rows], dtype=float)
            cols.append(np.log(1 - v) if h in ("beta1", "beta2") else np.log(v))
        Y = np.array([[float(x) if x is not None else np.nan for x in r["valid"]["loss"]]
                      for r in rows], dtype=float)[:, 1:]
        Y[~np.isfinite(Y)] = np.nan
        np.savez(npz, X=_scale(cols), Y=Y)
    d = np.load(npz)
    return d["X"], d["Y"]


def load_csv_table(path, params, log_params, metric="val_loss"):
    """A tune table (docs/simulate.md "The table format") as (X, Y); every configuration
    must have the same iterations 1..T (true of bench/tables/mlp and cnn)."""
    curves, cfgs = {}, {}
    with gzip.open(path, "rt", newline="") as f:
        for r in csv.DictReader(f):
            t = r["trial"]
            cfgs[t] = [float(r["config/" + p]) for p in params]
            v = r[metric]
            curves.setdefault(t, []).append(float(v) if v not in ("", "nan") else np.nan)
    names = list(curves)
    Y = np.array([curves[t] for t in names], dtype=float)
    cols = []
    for j, p in enumerate(params):
        v = np.array([cfgs[t][j] for t in names])
        cols.append(np.log(v) if p in log_params else v)
    return _scale(cols), Y


def load(task):
    if task == "mlp":
        return load_csv_table(os.path.join(ROOT, "bench/tables/mlp.csv.gz"),
                              ["lr", "batch_size", "momentum", "weight_decay", "hidden",
                               "layers", "warmup_epochs"],
                              {"lr", "batch_size", "weight_decay", "hidden"})
    if task == "cnn":
        return load_csv_table(os.path.join(ROOT, "bench/tables/cnn.csv.gz"),
                              ["lr", "batch_size", "momentum", "weight_decay",
                               "warmup_epochs"], {"lr", "batch_size", "weight_decay"})
    full = {SHORT[t]: t for t in TASKSET}
    return load_taskset(full.get(task, task))
