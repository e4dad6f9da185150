"""bench/search/curve/points.py: mean normalised regret of each method at fractions of the
horizon, from results/runs.json (run.py's runs), into results/curve_points.md; and
TPE(curve) against TPE(rung), paired Wilcoxon by seed, into results/curve_vs_rung.md."""
import json
import os

import numpy as np

from run import METHODS, TASKS

HERE = os.path.dirname(os.path.abspath(__file__))
IDX = [40, 50, 80, 100, 150, 200]  # of the 201 grid points over [0, horizon]

runs = json.load(open(os.path.join(HERE, "results", "runs.json")))
out = ["| task | method | " + " | ".join(f"t = {i / 2:g} %" for i in IDX) + " |",
       "|---|---|" + "---|" * len(IDX)]
for t in TASKS:
    for m in METHODS:
        c = np.array([r["regret"] for r in runs if r["task"] == t and r["method"] == m])
        if len(c):
            out.append(f"| {t} | {m} | " + " | ".join(f"{c[:, i].mean():.3f}" for i in IDX)
                       + " |")
open(os.path.join(HERE, "results", "curve_points.md"), "w").write("\n".join(out) + "\n")
print("\n".join(out))

# TPE(curve) against TPE(rung), paired by seed: does the curve model add anything?
from scipy.stats import wilcoxon  # noqa: E402

by = {(r["task"], r["method"], r["seed"]): np.array(r["regret"]) for r in runs}
seeds = sorted({r["seed"] for r in runs})
out = ["| task | AUC: TPE(curve) − TPE(rung), mean | p (W/L) | "
       "final: TPE(curve) − TPE(rung), mean | p |", "|---|---|---|---|---|"]
for t in TASKS:
    a = np.array([by[(t, "TPE(curve)+ASHA", s)].mean() - by[(t, "TPE(rung)+ASHA", s)].mean()
                  for s in seeds])
    f = np.array([by[(t, "TPE(curve)+ASHA", s)][-1] - by[(t, "TPE(rung)+ASHA", s)][-1]
                  for s in seeds])
    pa = wilcoxon(a).pvalue if np.any(a != 0) else 1.0
    pf = wilcoxon(f).pvalue if np.any(f != 0) else 1.0
    out.append(f"| {t} | {a.mean():+.3f} | {pa:.3f} ({(a < 0).sum()}/{(a > 0).sum()}) | "
               f"{f.mean():+.3f} | {pf:.3f} |")
open(os.path.join(HERE, "results", "curve_vs_rung.md"), "w").write("\n".join(out) + "\n")
print("\n".join(out))
