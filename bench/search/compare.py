#!/usr/bin/python3
"""bench/search/compare.py: random+ASHA against TPE+ASHA (both presets) on the simulator,
the same seeds for every method: `tune simulate` on the synthetic family, then the
incumbent (the best loss of a trial that reached max_t) over virtual time, read from the
database. A first step of issue 11's benchmark: no Optuna harness, no recorded tables, no
FIFO, no intervals yet. Not a test: it prints what it measured.

usage: bench/search/compare.py [--tune build/bin/tune] [--seeds 10] [--workers 4]
                               [--budget 20] [--dims 4] [--out DIR]
--budget is the virtual time in units of one full-budget training (max_t iterations).
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

MAX_T, RF = 81, 3
METHODS = [("random", None), ("tpe-optuna", {"type": "tpe", "preset": "optuna"}),
           ("tpe-bohb", {"type": "tpe", "preset": "bohb"})]


def space(seed, workers, budget_s, dims, search):
    s = {"name": "b", "metric": "loss", "mode": "min", "num_samples": 3000, "seed": seed,
         "max_concurrent": workers, "time_budget_s": budget_s,
         "scheduler": {"type": "asha", "max_t": MAX_T, "grace_period": 1,
                       "reduction_factor": RF},
         "command": ["x"],
         "space": {f"x{i}": {"uniform": [0, 1]} for i in range(dims)}}
    if search:
        s["search"] = search
    return s


def incumbent(db):
    """[(virtual seconds, best full-budget loss so far)], one point per improvement."""
    con = sqlite3.connect(db)
    t0 = con.execute("SELECT created_at FROM experiments").fetchone()[0]
    rows = con.execute("SELECT r.wall_time, r.metric FROM results r WHERE r.iteration = ? AND "
                       "r.metric IS NOT NULL ORDER BY r.wall_time, r.id", (MAX_T,)).fetchall()
    ntrials = con.execute("SELECT count(*) FROM trials").fetchone()[0]
    con.close()
    out, best = [], float("inf")
    for w, m in rows:
        if m < best:
            best = m
            out.append((w - t0, m))
    return out, ntrials


def time_to(curve, target):
    for t, m in curve:
        if m <= target:
            return t
    return float("inf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune", default="build/bin/tune")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--budget", type=float, default=20)
    ap.add_argument("--dims", type=int, default=4)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="tune-search-bench-")
    budget_s = a.budget * MAX_T  # synthetic iterations take 1 s on average
    res = {m: [] for m, _ in METHODS}
    for seed in range(1, a.seeds + 1):
        for name, search in METHODS:
            d = os.path.join(out, f"{name}-{seed}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "space.json"), "w") as f:
                json.dump(space(seed, a.workers, budget_s, a.dims, search), f)
            db = os.path.join(d, "t.db")
            if os.path.exists(db):
                os.remove(db)
            p = subprocess.run([os.path.abspath(a.tune), "simulate", "space.json", "--synthetic",
                                f"seed={seed},noise=0.02,cross=0.5", "--db", "t.db", "--quiet"],
                               cwd=d, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{name} seed {seed}: tune simulate failed:\n{p.stdout}{p.stderr}")
            res[name].append(incumbent(db))
    # the best loss any method reached per seed stands in for the task's optimum
    best = [min(res[m][i][0][-1][1] for m, _ in METHODS if res[m][i][0])
            for i in range(a.seeds)]
    print(f"synthetic family, {a.dims} parameters, ASHA max_t {MAX_T} rf {RF}, "
          f"{a.workers} workers, budget {a.budget:g} full trainings ({budget_s:g} virtual s), "
          f"seeds 1..{a.seeds}")
    print(f"{'method':<12} {'trials':>7} {'final regret (median)':>22} {'wins vs random':>15} "
          f"{'time to random final (median ratio)':>36}")
    for name, _ in METHODS:
        regrets, ratios, wins = [], [], 0
        for i in range(a.seeds):
            curve, _ = res[name][i]
            rcurve, _ = res["random"][i]
            final = curve[-1][1] if curve else float("inf")
            rfinal = rcurve[-1][1] if rcurve else float("inf")
            regrets.append(final - best[i])
            wins += final < rfinal
            rt = time_to(rcurve, rfinal)
            ratios.append(time_to(curve, rfinal) / rt if rt > 0 else float("nan"))
        trials = statistics.median(n for _, n in res[name])
        print(f"{name:<12} {trials:>7g} {statistics.median(regrets):>22.4g} "
              f"{wins:>9d} of {a.seeds:<3d} {statistics.median(ratios):>36.3g}")
    print(f"(databases in {out})")


if __name__ == "__main__":
    main()
