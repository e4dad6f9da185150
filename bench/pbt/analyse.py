#!/usr/bin/python3
"""analyse.py: the table of bench/pbt/run.sh from its runs.tsv (one line per tune run:
arm, seed, best final val_accuracy, final val_accuracy of the trial best at any epoch,
the population's mean final val_accuracy, the picked trial's held-out accuracy, trial-s,
CPU-s, wall-s, trial-epochs, exploits, exploits at the final epoch).

Per arm: means with percentile bootstrap 95% intervals (10,000 resamples of the seeds).
Per pair of arms (pbt against each other arm): the difference seed by seed (the same seed
draws the same 8 starting configurations in every arm), its mean with a bootstrap
interval, the sign count (better / tied / worse) and the two-sided Wilcoxon signed-rank
p-value (scipy's, zeros dropped; exact for small samples without ties). Only seeds every
arm finished are used. Not for: running anything (run.sh does).

  analyse.py RUNS.tsv [EPOCHS]
"""
import csv
import math
import random
import sys
from collections import defaultdict

METRICS = [
    ("best_final", "best final val_accuracy (the trial tune best picks)", 4),
    ("best_any_final", "final val_accuracy of the trial best at any epoch", 4),
    ("mean_final", "population's mean final val_accuracy", 4),
    ("heldout", "picked trial on held-out test images 2001-10000", 4),
    ("trial_s", "trial-seconds (every attempt)", 1),
    ("cpu_s", "CPU seconds of the run (tune + trainers)", 1),
    ("wall_s", "wall seconds of the run", 1),
    ("epochs", "trial-epochs trained", 1),
]


def boot(xs, rng, n=10000):
    m = sum(xs) / len(xs)
    means = sorted(sum(rng.choice(xs) for _ in xs) / len(xs) for _ in range(n))
    return m, means[int(0.025 * n)], means[int(0.975 * n) - 1]


def wilcoxon_p(d):
    nz = [x for x in d if x != 0]
    if len(nz) < 1:
        return float("nan")
    try:
        from scipy.stats import wilcoxon
        return float(wilcoxon(nz).pvalue)
    except Exception:  # no scipy: the normal approximation
        n = len(nz)
        ranks = sorted(range(n), key=lambda i: abs(nz[i]))
        r = [0.0] * n
        i = 0
        while i < n:  # average ranks of ties
            j = i
            while j + 1 < n and abs(nz[ranks[j + 1]]) == abs(nz[ranks[i]]):
                j += 1
            for k in range(i, j + 1):
                r[ranks[k]] = (i + j) / 2 + 1
            i = j + 1
        w = sum(r[i] for i in range(n) if nz[i] > 0)
        mu, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        z = (w - mu) / sd
        return math.erfc(abs(z) / math.sqrt(2))


def fmt(v, digits):
    return f"{v:.{digits}f}" if digits > 1 else f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}"


def main():
    rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else None
    by = defaultdict(dict)  # arm -> seed -> row
    for r in rows:
        if float(r["trial_s"]) < 0:  # a torn line of timed.sh's log (fixed since): unknown
            print(f"{r['arm']} seed {r['seed']}: trial-seconds unknown ({r['trial_s']})")
            r["trial_s"] = "nan"
        by[r["arm"]][r["seed"]] = r
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    # only the seeds every arm finished, so that the arms are compared on the same seeds
    common = set.intersection(*(set(by[a]) for a in arms))
    for a in arms:
        left = sorted(set(by[a]) - common, key=int)
        if left:
            print(f"{a}: seeds {' '.join(left)} left out (not every arm finished them)")
        by[a] = {s: r for s, r in by[a].items() if s in common}
    rng = random.Random(12)
    print(f"\nper arm: mean [bootstrap 95% interval] over seeds")
    print("| metric | " + " | ".join(f"{a} (n={len(by[a])})" for a in arms) + " |")
    print("|---|" + "---|" * len(arms))
    for key, label, dg in METRICS:
        cells = []
        for a in arms:
            xs = [float(r[key]) for r in by[a].values() if r[key] not in ("nan", "")]
            if not xs:
                cells.append("-")
                continue
            m, lo, hi = boot(xs, rng)
            cells.append(f"{fmt(m, dg)} [{fmt(lo, dg)}, {fmt(hi, dg)}]")
        print(f"| {label} | " + " | ".join(cells) + " |")
    if "pbt" in by:
        ex = [int(r["exploits"]) for r in by["pbt"].values()]
        fx = [int(r["final_exploits"]) for r in by["pbt"].values()]
        print(f"\npbt exploits: {sum(ex)} in {len(ex)} runs ({sum(ex) / len(ex):.1f} a run); "
              f"{sum(fx)} ({100 * sum(fx) / max(1, sum(ex)):.0f}%) took a donor checkpoint of "
              f"the final epoch{f' ({epochs})' if epochs else ''}, restarting a clone with "
              f"nothing left to train; runs with at least one: "
              f"{sum(1 for x in fx if x)} of {len(fx)}")
    for other in arms:
        if other == "pbt" or "pbt" not in by:
            continue
        seeds = sorted(set(by["pbt"]) & set(by[other]), key=int)
        print(f"\npbt - {other}, paired by seed (n={len(seeds)}): mean [bootstrap 95%], "
              f"sign count better/tied/worse, Wilcoxon signed-rank p (two-sided)")
        print("| metric | pbt - " + other + " | better/tied/worse | Wilcoxon p |")
        print("|---|---|---|---|")
        for key, label, dg in METRICS:
            d = [float(by["pbt"][s][key]) - float(by[other][s][key]) for s in seeds
                 if by["pbt"][s][key] != "nan" and by[other][s][key] != "nan"]
            if not d:
                continue
            m, lo, hi = boot(d, rng)
            sign = f"{sum(x > 0 for x in d)}/{sum(x == 0 for x in d)}/{sum(x < 0 for x in d)}"
            p = wilcoxon_p(d)
            print(f"| {label} | {m:+.{dg if dg > 1 else 1}f} [{lo:+.{dg if dg > 1 else 1}f}, "
                  f"{hi:+.{dg if dg > 1 else 1}f}] | {sign} | {p:.3g} |")
        print("\nper seed (" + ", ".join(["seed", f"pbt best_final", f"{other} best_final",
                                           "pbt heldout", f"{other} heldout"]) + "):")
        for s in seeds:
            p, o = by["pbt"][s], by[other][s]
            print(f"  {s:>3}  {p['best_final']:>7} {o['best_final']:>7}   "
                  f"{float(p['heldout']):.4f} {float(o['heldout']):.4f}")


if __name__ == "__main__":
    main()
