#!/usr/bin/python3
"""bench/search/pairwise.py: issue 29's targets and any two methods compared, from a
results.json that bench.py wrote.

    bench/search/pairwise.py OUT/results.json [--a METHOD] [--b METHOD]

For every (task, W) cell: METHOD a against METHOD b on AUC (means, wins-losses over the
paired seeds, two-sided paired Wilcoxon p, bench.py's own test); then the issue's three
targets for METHOD a: the median time to random+ASHA's final regret over random's <= 0.7
(W = 4), AUC never significantly worse than random+ASHA (p < 0.05 with the higher mean),
and a lower mean AUC than Optuna TPE+SH. Reads only what bench.py wrote; numpy (for
bench.py's test) under /usr/bin/python3.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import BASELINE, PEER, wilcoxon  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--a", default="TPE(optuna)+ASHA")
    ap.add_argument("--b", default=None, help="default: only the targets")
    a = ap.parse_args(argv)
    with open(a.results) as f:
        r = json.load(f)
    rows = {}
    for cell in r["cells"]:
        for row in cell["rows"]:
            rows[(cell["task"], cell["workers"], row["method"])] = row
    cells = sorted({(t, w) for t, w, _ in rows})
    if a.b:
        print(f"AUC, {a.a} (a) against {a.b} (b): mean a, mean b, a's wins-losses, p")
        for t, w in cells:
            x, y = rows.get((t, w, a.a)), rows.get((t, w, a.b))
            if not x or not y:
                continue
            xa, ya = x["auc_per_seed"], y["auc_per_seed"]
            p, _ = wilcoxon(xa, ya)
            win = sum(u < v for u, v in zip(xa, ya))
            loss = sum(u > v for u, v in zip(xa, ya))
            print(f"| {t} | {w} | {x['auc']:.3f} | {y['auc']:.3f} | {win}-{loss} | {p:.2g} |")
    print(f"\nTargets for {a.a}: time ratio (<= 0.7 at W = 4), AUC vs random+ASHA (never "
          f"significantly worse), AUC vs Optuna TPE+SH (lower mean)")
    n_time = n_worse = n_beat = n = n_peer = 0
    for t, w in cells:
        x, rnd, peer = (rows.get((t, w, m)) for m in (a.a, BASELINE, PEER))
        if not x or not rnd:
            continue
        n += 1
        p_r, _ = wilcoxon(x["auc_per_seed"], rnd["auc_per_seed"])
        ratio = x.get("ratio", float("inf"))  # absent when random reached nothing
        fast = w == 4 and ratio <= 0.7
        worse = p_r < 0.05 and x["auc"] > rnd["auc"]
        n_time += fast
        n_worse += worse
        if peer:  # a run without Optuna's methods says so rather than drop the cell
            p_o, _ = wilcoxon(x["auc_per_seed"], peer["auc_per_seed"])
            beat = x["auc"] < peer["auc"]
            n_beat += beat
            n_peer += 1
            vs_peer = (f"{x['auc']:.3f} vs {peer['auc']:.3f}, p={p_o:.2g} "
                       f"{'yes' if beat else 'no'}")
        else:
            vs_peer = f"({PEER} not run)"
        print(f"| {t} | {w} | {ratio:.2f} {'yes' if fast else 'no'} | {x['auc']:.3f} vs "
              f"{rnd['auc']:.3f}, p={p_r:.2g} {'WORSE' if worse else 'ok'} | {vs_peer} |")
    print(f"\n{n} cells: time target met on {n_time}, significantly worse than random on "
          f"{n_worse}, lower AUC than {PEER} on {n_beat} of the {n_peer} where it ran")


if __name__ == "__main__":
    main()
