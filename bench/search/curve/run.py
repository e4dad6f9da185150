"""bench/search/curve/run.py: every (task, method, seed) of the curve prototype's comparison
under sim.py (pool protocol, ASHA grace 1, rf 3, W workers, budget in full trainings), and
the summary: final regret, AUC, time to random+ASHA's final regret (ratio, per seed), with
bootstrap intervals and paired Wilcoxon tests on AUC. Writes results.json and results.md.

usage: run.py [--seeds 20] [--workers 4] [--budget 20] [--jobs 2] [--tasks ...]
              [--methods ...] [--summary-only]"""
import argparse
import json
import math
import multiprocessing as mp
import os
import time

import numpy as np

import searchers as S
import sim
import tables

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = list(tables.SHORT.values()) + ["mlp", "cnn"]
METHODS = {
    "random+ASHA": lambda X, T, s, ms: S.Random(X, T, s),
    "TPE(rung)+ASHA": lambda X, T, s, ms: S.TpeRung(X, T, s, ms),
    "TPE(curve)+ASHA": lambda X, T, s, ms: S.TpeCurve(X, T, s, ms),
    "KernelEI(curve)+ASHA": lambda X, T, s, ms: S.KernelEI(X, T, s),
    "TPE(curve)+curve-ASHA": lambda X, T, s, ms: S.TpeCurve(X, T, s, ms, curve_stop=True),
    # BOHB's safeguard: a third of the new configurations drawn at random
    "TPE(curve; 1/3 random)+ASHA": lambda X, T, s, ms: S.TpeCurve(X, T, s, ms, rand_frac=1 / 3),
    "KernelEI(curve; 1/3 random)+ASHA": lambda X, T, s, ms: S.KernelEI(X, T, s,
                                                                       rand_frac=1 / 3),
}
BASE = "random+ASHA"


def job(a):
    task, method, seed, workers, budget = a
    X, Y = tables.load(task)
    T = Y.shape[1]
    ms = sim.milestones(1, 3, T)
    t0 = time.process_time()
    # the searcher's stream and the pool are the same for every method at a seed
    reg, n = sim.run(X, Y, METHODS[method](X, T, 1000 * seed + 7, ms), workers=workers,
                     budget_full=budget, seed=seed)
    return {"task": task, "method": method, "seed": seed, "workers": workers,
            "budget": budget, "regret": reg.tolist(), "trials": n,
            "cpu_s": time.process_time() - t0}


def boot(x, stat=np.median, n=2000, seed=0):
    x = np.asarray(x, float)
    idx = np.random.default_rng(seed).integers(0, len(x), size=(n, len(x)))
    v = np.array([stat(x[i]) for i in idx])
    return float(np.percentile(v, 2.5, method="lower")), float(
        np.percentile(v, 97.5, method="higher"))


def time_to(curve, target, horizon):
    grid = np.linspace(0, horizon, sim.GRID)
    hit = np.nonzero(np.asarray(curve) <= target + 1e-12)[0]
    return float(grid[hit[0]]) if len(hit) else math.inf


def summarise(runs, tasks, methods):
    from scipy.stats import wilcoxon
    rows = []
    for task in tasks:
        by = {m: {r["seed"]: r for r in runs if r["task"] == task and r["method"] == m}
              for m in methods}
        seeds = sorted(set.intersection(*[set(v) for v in by.values()]))
        if not seeds:
            continue
        r0 = by[methods[0]][seeds[0]]
        horizon = r0["budget"] * tables.load(task)[1].shape[1] / r0["workers"]
        base_auc = np.array([np.mean(by[BASE][s]["regret"]) for s in seeds])
        for m in methods:
            cur = np.array([by[m][s]["regret"] for s in seeds])
            auc, fin = cur.mean(axis=1), cur[:, -1]
            ratios = []
            for s in seeds:
                tgt = by[BASE][s]["regret"][-1]
                if tgt >= 1:
                    continue
                ratios.append(time_to(by[m][s]["regret"], tgt, horizon)
                              / time_to(by[BASE][s]["regret"], tgt, horizon))
            row = {"task": task, "method": m, "seeds": len(seeds),
                   "trials": float(np.median([by[m][s]["trials"] for s in seeds])),
                   "cpu_s": float(np.mean([by[m][s]["cpu_s"] for s in seeds])),
                   "final": float(fin.mean()), "final_ci": boot(fin, np.mean),
                   "auc": float(auc.mean()), "auc_ci": boot(auc, np.mean),
                   "ratio": float(np.median(ratios)) if ratios else None,
                   "ratio_ci": boot(ratios) if ratios else None,
                   "reached": int(sum(math.isfinite(x) for x in ratios))}
            if m != BASE:
                d = auc - base_auc
                p = float(wilcoxon(d).pvalue) if np.any(d != 0) else 1.0
                row.update(p=p, wins=int((d < 0).sum()), losses=int((d > 0).sum()))
            rows.append(row)
    return rows


def fmt(v, ci, k=3):
    f = lambda x: "inf" if x is None or not math.isfinite(x) else f"{x:.{k}f}"
    return f"{f(v)} [{f(ci[0])}, {f(ci[1])}]" if ci else "n/a"


def markdown(rows, meta):
    out = [f"W = {meta['workers']}, budget {meta['budget']} full trainings, "
           f"{meta['seeds']} seeds, pool protocol, ASHA grace 1 rf 3. Means with bootstrap "
           "95 % intervals (AUC, final); time ratio: median over seeds of (time to reach "
           "random+ASHA's final regret of that seed) / (random+ASHA's own time), with a "
           "bootstrap interval of the median (inf: not reached in the budget on that many "
           "seeds). p: two-sided paired Wilcoxon on AUC against random+ASHA; W/L: seeds "
           "with lower/higher AUC.", "",
           "| task | method | trials | AUC | final regret | time ratio (reached) | "
           "p vs random (W/L) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        rat = (fmt(r["ratio"], r["ratio_ci"], 2) + f" ({r['reached']}/{r['seeds']})"
               if r["ratio"] is not None else "n/a")
        p = f"{r['p']:.3f} ({r['wins']}/{r['losses']})" if "p" in r else ""
        out.append(f"| {r['task']} | {r['method']} | {r['trials']:.0f} | "
                   f"{fmt(r['auc'], r['auc_ci'])} | {fmt(r['final'], r['final_ci'])} | "
                   f"{rat} | {p} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--summary-only", action="store_true")
    a = ap.parse_args()
    tasks, methods = a.tasks.split(","), a.methods.split(",")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "runs.json")
    runs = []
    if os.path.exists(path):  # runs already made are kept; only the missing ones run
        with open(path) as f:
            runs = json.load(f)
    if not a.summary_only:
        have = {(r["task"], r["method"], r["seed"], r["workers"], r["budget"]) for r in runs}
        jobs = [(t, m, s, a.workers, a.budget) for t in tasks for s in range(1, a.seeds + 1)
                for m in methods if (t, m, s, a.workers, a.budget) not in have]
        with mp.Pool(a.jobs) as pool:
            runs += pool.map(job, jobs, chunksize=1)
        with open(path, "w") as f:
            json.dump(runs, f)
    runs = [r for r in runs if r["workers"] == a.workers and r["budget"] == a.budget]
    rows = summarise(runs, tasks, methods)
    meta = {"workers": a.workers, "budget": a.budget, "seeds": a.seeds}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    md = markdown(rows, meta)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
