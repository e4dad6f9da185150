#!/usr/bin/python3
"""promotion.py: the table of bench/pause/promotion.sh from its runs (one line per
simulated run: task, workers, variant, seed, compute in trial-hours, the incumbent's
val_loss). Means with bootstrap 95% intervals (percentile, 10,000 resamples of the seeds),
and the paired difference promotion - stopping (the same seed samples the same
configurations in both, so the difference is taken seed by seed). Standard library only.
Not for: running anything (promotion.sh does).

  promotion.py RUNS.tsv MLP_TABLE.csv.gz [SYNTH_SPEC]

SYNTH_SPEC is the synthetic runs' spec without the seed (default noise=0); its cross (0.5
unless given) sets the family's best. With noise > 0 the regret is still measured against
the noise-free best, so it can come out below 0.
"""
import csv
import gzip
import math
import random
import sys
from collections import defaultdict

MAX_T = 20


def table_best(path):
    """The best last val_loss of the table's configurations (all run to max_t)."""
    last = {}
    with gzip.open(path, "rt", newline="") as f:
        for row in csv.DictReader(f):
            last[row["trial"]] = row
    vals = [float(r["val_loss"]) for r in last.values()
            if r["val_loss"] not in ("", "nan") and int(r["training_iteration"]) == MAX_T]
    return min(vals)


def synth_best(cross):
    """The synthetic family's best loss at max_t without noise (docs/simulate.md):
    min over q >= 0 of 0.05 + 2q + 2 exp(-4 cross q) t^(-(1 + 4 cross q) / 2). Every q from
    0 to well past the minimum (q ~ 0.022 at t = 20) is reached by some configuration of
    the continuous space, whatever the seed's optimum and weights, so this is the family's
    best for every seed."""
    def f(q):
        return (0.05 + 2 * q + 2 * math.exp(-4 * cross * q)
                * MAX_T ** (-0.5 * (1 + 4 * cross * q)))
    lo, hi = 0.0, 0.5
    for _ in range(200):  # ternary search: f is convex on [0, 0.5]
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f(a) < f(b):
            hi = b
        else:
            lo = a
    return f((lo + hi) / 2)


def boot(xs, rng, n=10000):
    """Mean and percentile bootstrap 95% interval."""
    m = sum(xs) / len(xs)
    means = sorted(sum(rng.choice(xs) for _ in xs) / len(xs) for _ in range(n))
    return m, means[int(0.025 * n)], means[int(0.975 * n) - 1]


def fmt(t, digits):
    m, lo, hi = t
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def main():
    runs, table = sys.argv[1], sys.argv[2]
    spec = dict(kv.split("=", 1) for kv in (sys.argv[3] if len(sys.argv) > 3 else "").split(",")
                if "=" in kv)
    best = {"mlp": table_best(table), "synth": synth_best(float(spec.get("cross", 0.5)))}
    data = defaultdict(dict)  # (task, workers) -> {(variant, seed): (compute_s, regret)}
    with open(runs) as f:
        for line in f:
            task, w, variant, seed, hours, value = line.split("\t")
            data[(task, int(w))][(variant, int(seed))] = (
                float(hours) * 3600, float(value) - best[task])
    rng = random.Random(12)
    print(f"best: mlp table {best['mlp']:.6f} (last val_loss); synth family "
          f"{best['synth']:.6f} ({sys.argv[3] if len(sys.argv) > 3 else 'noise=0'})")
    print("task  W   variant     seeds  compute trial-s mean [95% CI]    "
          "regret mean [95% CI]")
    for (task, w) in sorted(data, key=lambda k: (k[0] != "mlp", k[1])):
        d = data[(task, w)]
        seeds = sorted({s for (_, s) in d})
        for v in ("stopping", "promotion"):
            c = [d[(v, s)][0] for s in seeds]
            r = [d[(v, s)][1] for s in seeds]
            print(f"{task:5s} {w:<3d} {v:11s} {len(seeds):5d}  {fmt(boot(c, rng), 0):32s} "
                  f"{fmt(boot(r, rng), 5)}")
        dc = [d[("promotion", s)][0] - d[("stopping", s)][0] for s in seeds]
        dr = [d[("promotion", s)][1] - d[("stopping", s)][1] for s in seeds]
        print(f"{task:5s} {w:<3d} {'difference':11s} {len(seeds):5d}  {fmt(boot(dc, rng), 0):32s} "
              f"{fmt(boot(dr, rng), 5):27s} (promotion - stopping, paired by seed)")


if __name__ == "__main__":
    main()
