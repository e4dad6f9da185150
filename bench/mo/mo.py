#!/usr/bin/python3
"""bench/mo/mo.py: issue 30's multi-objective benchmark on the simulator.

Every method searches the same learning-curve table for two objectives (both minimised) on
the same virtual clock with the same number of workers W and the same seeds:

  random+MO-ASHA, MOTPE+MO-ASHA          -- `tune simulate` with "metric": [a, b]
  Optuna 3.1 NSGAIISampler, TPESampler    -- this file's replay harness (ask/tell),
  (MOTPE) on a two-objective study          without pruning: Optuna cannot prune a
                                            multi-objective study (optuna#3450)

Tasks (TASKS below): the MLP table with (final val_loss, parameter count), the CNN table
with (final val_loss, training time time_total_s), and a synthetic two-objective task
(the synthetic family's loss and cost, docs/simulate.md "Several objectives") drawn at a
fixed set of configurations as bench/search does, so both sides answer a configuration
from the same table by the same nearest-row rule (bench/search/bench.py's Table).

The budget is compute, as in bench/search: --budget full-budget trainings of worker time,
so a run lasts budget * T_full / W of virtual time. A trial's point is its objectives at
max_t (a trial stopped earlier trained no model to compare); the front at virtual time t is
the non-dominated set of the points that arrived by t, and its hypervolume is measured in
objectives normalised by the table's own values at max_t (the loss from the table's best
to its median, as bench/search normalises regret; the second objective from its minimum to
its maximum) with the reference point (1.1, 1.1) in those units, and reported as a share
of the hypervolume of the whole table's front (1 = the table's own front found). Rows whose
loss is NaN at max_t (diverged) have no point.

Not a test (tests/python/test_mobench.py runs it on a tiny task). Results go to --out.

usage: bench/mo/mo.py [--seeds 30] [--workers 4,16] [--tasks mlp,cnn,synth]
                      [--methods ...] [--budget 100] [--loss-scale median|max]
                      [--jobs 2] [--out DIR]
"""

import argparse
import csv
import gzip
import heapq
import json
import math
import os
import shutil
import sqlite3
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "search"))
import bench as sb  # noqa: E402  bench/search/bench.py: the table, the rule, the statistics
from runs import START_DELAY, TUNE_METHODS, tune_space  # noqa: E402

GRID = sb.GRID
REF = 1.1  # the reference point in each normalised objective

# name -> (bench/search's method that runs it: the same space.json edits, the search type)
TUNE_MO_METHODS = {
    "random+MO-ASHA": "random+ASHA",
    "MOTPE+MO-ASHA": "TPE(optuna)+ASHA",
}
OPTUNA_MO_METHODS = {
    "Optuna NSGA-II": "nsga2",
    "Optuna MOTPE": "motpe",
}
METHODS = list(TUNE_MO_METHODS) + list(OPTUNA_MO_METHODS)
DEFAULT_METHODS = METHODS

TASKS = [
    # all 400 rows of the MLP table, with "params" added from each row's configuration
    {"name": "mlp", "space": "tasks/mlp.json", "table": "bench/tables/mlp.csv.gz",
     "derive": "params"},
    {"name": "cnn", "space": "tasks/cnn.json", "table": "bench/tables/cnn.csv.gz"},
    {"name": "synth", "space": "tasks/synth.json", "rows": 1000,
     "synthetic": "seed=30,noise=0.02,cross=0.5,diverge=0.05,iters=27"},
    # not in the default list: the MLP table's recorded training time as the second objective
    {"name": "mlp-time", "space": "tasks/mlp-time.json", "table": "bench/tables/mlp.csv.gz"},
]
DEFAULT_TASKS = "mlp,cnn,synth"


# ---------------------------------------------------------------- the tables

def mlp_params(hidden, layers, inputs=784, classes=10):
    """The parameter count of tune-train's MLP (train/model.c: `layers` linear layers of
    `hidden` units with ReLU, then one to the classes; weights and biases)."""
    n, fan_in = 0, inputs
    for _ in range(layers):
        n += fan_in * hidden + hidden
        fan_in = hidden
    return n + fan_in * classes + classes


# train/train_int.h's example of tune-train's own count: "mlp 784-256-256-10, 269322 parameters"
assert mlp_params(256, 2) == 269322


def derive_params(path, out):
    """The table at `path` with a "params" column: mlp_params of each row's config/hidden and
    config/layers (docs/simulate.md, "Several objectives": a cost computed from the
    configuration is a column)."""
    if os.path.exists(out):
        return out
    with gzip.open(path, "rt", newline="") as f, open(out + ".tmp", "w", newline="") as g:
        r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
        head = next(r)
        h, ly = head.index("config/hidden"), head.index("config/layers")
        w.writerow(head + ["params"])
        for row in r:
            w.writerow(row + [str(mlp_params(int(float(row[h])), int(float(row[ly]))))])
    os.replace(out + ".tmp", out)
    return out


class MoSpace(sb.Space):
    """A space.json with "metric": [a, b]: bench/search's Space on the first metric, with the
    list kept."""

    def __init__(self, path, metric=None):
        with open(path) as f:
            raw = json.load(f)
        metrics = raw["metric"] if isinstance(raw["metric"], list) else [raw["metric"]]
        modes = raw.get("mode", "min")
        modes = modes if isinstance(modes, list) else [modes] * len(metrics)
        # bench/search's Space reads one metric: give it the one asked for
        tmp = dict(raw, metric=metric or metrics[0], mode=modes[metrics.index(metric or metrics[0])])
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(tmp, f)
        try:
            super().__init__(f.name)
        finally:
            os.unlink(f.name)
        self.raw = raw
        self.metrics, self.modes = metrics, modes


class MoTable:
    """A table read for two objectives: bench/search's Table (the rows, their seconds, the
    nearest-row rule) on the first, and each row's second objective at max_t: its column
    (a second Table on it), or, for time_total_s where the table has no such column, the
    sum of the row's seconds through max_t, which tune simulate reports (docs/simulate.md)."""

    def __init__(self, path, space_path, loss_hi="median"):
        self.space = MoSpace(space_path)
        self.t = sb.Table(path, self.space)
        a, b = self.space.metrics[:2]
        op = gzip.open if path.endswith(".gz") else open
        with op(path, "rt", newline="") as f:
            head = next(csv.reader(f))
        n, mt = len(self.t.configs), self.t.max_t
        if b == "time_total_s" and b not in head:
            second = [float(sum(ts[:mt])) if len(ts) >= mt else float("nan") for ts in self.t.times]
        else:
            t2 = sb.Table(path, MoSpace(space_path, metric=b))
            second = [v[mt - 1] if len(v) >= mt else float("nan") for v in t2.values]
        first = [v[mt - 1] if len(v) >= mt else float("nan") for v in self.t.values]
        sign = [1.0 if m == "min" else -1.0 for m in self.space.modes[:2]]
        self.sign = sign
        pts = np.array([[sign[0] * x, sign[1] * y] for x, y in zip(first, second)]).reshape(n, 2)
        self.points = pts  # per row: its max_t point, minimised (NaN where it has none)
        fin = pts[np.isfinite(pts).all(axis=1)]
        # the loss as bench/search normalises its regret: from the table's best to its
        # median (a diverged row's finite loss of 11 would otherwise stretch the scale until
        # any decent point filled the box), or with loss_hi "max" to its worst finite value;
        # the cost from its minimum to its maximum (the dearest row may be the best one)
        self.lo = fin.min(axis=0)
        top = np.median(fin[:, 0]) if loss_hi == "median" else fin[:, 0].max()
        self.hi = np.array([top, fin[:, 1].max()])
        self.hi = np.where(self.hi > self.lo, self.hi, self.lo + 1)
        self.hv_table = hv2(self.normalise(fin))
        self.t_full, self.min_iter, self.max_t = self.t.t_full, self.t.min_iter, mt
        self.objectives = (a, b)

    def normalise(self, pts):
        return (np.asarray(pts, float).reshape(-1, 2) - self.lo) / (self.hi - self.lo)


def hv2(pts, ref=(REF, REF)):
    """The exact hypervolume of 2-D points (minimised) against ref: the area the points
    dominate inside the box below ref. Points not strictly better than ref in both
    objectives, or with a NaN, add nothing (pareto/pareto.h's pareto_hypervolume counts the
    same points)."""
    p = np.asarray(pts, float).reshape(-1, 2)
    p = p[np.isfinite(p).all(axis=1) & (p[:, 0] < ref[0]) & (p[:, 1] < ref[1])]
    if len(p) == 0:
        return 0.0
    p = p[np.lexsort((p[:, 1], p[:, 0]))]  # by the first objective, then the second
    hv, best_y = 0.0, ref[1]
    for x, y in p:  # a staircase: each point adds the strip below the best y so far
        if y < best_y:
            hv += (ref[0] - x) * (best_y - y)
            best_y = y
    return float(hv)


def check_hv(mo_hv, tables, trials=200, seed=0):
    """hv2 against the engine's pareto_hypervolume (bench/mo/mo_hv.c) on random point sets
    (with NaN, ties and points beyond the reference) and on each table's normalised points:
    equal to 1e-12 relative, else SystemExit. Returns what was checked, in words."""
    import subprocess
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(trials):
        n = int(rng.integers(0, 40))
        p = rng.random((n, 2)) * 1.3
        if n > 3:
            p[rng.integers(0, n)] = np.nan
            p[rng.integers(0, n), 0] = p[0, 0]  # a tie in the first objective
        sets.append(p)
    sets += [t.normalise(t.points) for t in tables]
    for p in sets:
        text = "\n".join(f"{x!r} {y!r}" for x, y in p) + "\n"
        r = subprocess.run([mo_hv, str(REF), str(REF)], input=text, capture_output=True,
                           text=True, check=True)
        want, got = float(r.stdout), hv2(p)
        if abs(want - got) > 1e-12 * max(1.0, abs(want)):
            raise SystemExit(f"mo: hv2 gives {got!r} where pareto_hypervolume gives {want!r} "
                             f"for {len(p)} points: the benchmark's hypervolume is wrong")
    return (f"hv2 equals the engine's pareto_hypervolume (bench/mo/mo_hv.c) to 1e-12 on "
            f"{trials} random point sets and the {len(tables)} tables' points")


def hv_curve(table, events, budget):
    """events: [(virtual time, point minimised)] in arrival order. The hypervolume of the
    front of the points arrived by each of GRID times over [0, budget], as a share of the
    table's."""
    grid = np.linspace(0, budget, GRID)
    out = np.zeros(GRID)
    pts, k, hv = [], 0, 0.0
    for i, t in enumerate(grid):
        grew = False
        while k < len(events) and events[k][0] <= t:
            pts.append(events[k][1])
            k += 1
            grew = True
        if grew:
            hv = hv2(table.normalise(pts)) / table.hv_table
        out[i] = hv
    return out


def make_synth_table(task, tune, work):
    """The synthetic family at the task's rows, drawn by bench/search's generation run (FIFO,
    seed 2026) with the first metric only (its results report the cost anyway), exported
    as a table."""
    with open(task["space_path"]) as f:
        sp = json.load(f)
    sp["metric"], sp["mode"] = sp["metric"][0], sp["mode"][0]
    gen = os.path.join(work, f"gen-{task['name']}.json")
    with open(gen, "w") as f:
        json.dump(sp, f)
    return sb.make_synthetic_table(task, gen, tune, work)


# ---------------------------------------------------------------- the runs

def run_tune(tune, task, table, method, seed, workers, budget, work):
    """One `tune simulate` run: its max_t points in order of arrival, and its trial count."""
    sp, args = tune_space(task["space_path"], task["table_path"], TUNE_MO_METHODS[method], seed,
                          workers, budget, table.min_iter, "t.db")
    d = tempfile.mkdtemp(dir=work)
    try:
        with open(os.path.join(d, "space.json"), "w") as f:
            json.dump(sp, f)
        sb._run([tune] + args, d)
        con = sqlite3.connect(os.path.join(d, "t.db"))
        t0 = con.execute("SELECT created_at FROM experiments").fetchone()[0]
        rows = con.execute(
            "SELECT r.wall_time, r.data FROM results r JOIN trials t ON t.id = r.trial_id "
            "WHERE r.iteration = ? AND r.attempt = t.attempt ORDER BY r.wall_time, r.id",
            (table.max_t,)).fetchall()
        ntrials = con.execute("SELECT count(*) FROM trials WHERE started_at IS NOT NULL"
                              ).fetchone()[0]
        con.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    a, b = table.objectives
    events = []
    for w, data in rows:
        r = json.loads(data)  # NaN is a number to Python's json
        x, y = r.get(a), r.get(b)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            events.append((w - t0, (table.sign[0] * x, table.sign[1] * y)))
    return events, ntrials


class OptunaMoReplay:
    """Optuna's multi-objective sampler driven through ask/tell over a table on a virtual
    clock with W workers, as sim/exec.c replays curves for tune and bench/search's
    OptunaReplay does for one objective: a trial starts when a worker is free, its
    configuration is answered by the table's nearest row, and it trains to max_t (or the
    end of its curve) start_delay + the seconds of its iterations later, with no pruning;
    then it is told its two values (a NaN makes it FAIL, as Optuna does). Events of equal
    time go in trial order; the run ends at the budget. `trace` keeps (trial, start, end)."""

    def __init__(self, table, seed, workers, budget, kind):
        import warnings
        import optuna
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.optuna = optuna
        self.table, self.workers, self.budget = table, workers, budget
        if kind == "nsga2":
            sampler = optuna.samplers.NSGAIISampler(seed=seed)
        else:  # Optuna 3.1's TPESampler is MOTPE on a study with several directions
            sampler = optuna.samplers.TPESampler(seed=seed)
        dirs = ["minimize" if m == "min" else "maximize" for m in table.space.modes[:2]]
        self.study = optuna.create_study(directions=dirs, sampler=sampler)
        self.trace, self.events = [], []

    def run(self):
        tb, t = self.table, self.table.t
        heap, run, n = [], {}, 0

        def launch(now):
            nonlocal n
            tr = self.study.ask()
            row = t.nearest(tb.space.suggest(tr))
            iters = min(len(t.times[row]), tb.max_t)
            end = now + START_DELAY + sum(t.times[row][:iters])
            run[n] = (tr, row, now, iters)
            heapq.heappush(heap, (end, n))
            n += 1

        for _ in range(self.workers):
            launch(0.0)
        while heap:
            at, no = heapq.heappop(heap)
            if at > self.budget:
                break
            tr, row, start, iters = run.pop(no)
            x = t.values[row][iters - 1]
            y = tb.points[row][1] * tb.sign[1] if iters == tb.max_t else float("nan")
            if iters == tb.max_t and math.isfinite(x) and math.isfinite(y):
                self.events.append((at, (tb.sign[0] * x, tb.sign[1] * y)))
                self.study.tell(tr, [x, y])
            else:
                self.study.tell(tr, state=self.optuna.trial.TrialState.FAIL)
            self.trace.append((no, start, at))
            launch(at)
        for no, (_, _, start, _) in run.items():  # stopped by the budget
            self.trace.append((no, start, self.budget))
        return self.events, n


_tables = {}


def load_table(task, loss_hi="median"):
    key = (task["table_path"], task["space_path"], loss_hi)
    if key not in _tables:
        _tables[key] = MoTable(task["table_path"], task["space_path"], loss_hi)
    return _tables[key]


def job(args):
    """One (task, W, method, seed) run: its max_t points as [time, a, b] (minimised) in
    order of arrival, and counts. The hypervolume is computed from them when the runs are
    summarised, so that another reference point needs no run."""
    task, method, seed, workers, budget, tune, work = args
    table = load_table(task)
    t0 = time.process_time()
    c0 = os.times()
    if method in TUNE_MO_METHODS:
        events, ntrials = run_tune(tune, task, table, method, seed, workers, budget, work)
    else:
        events, ntrials = OptunaMoReplay(table, seed, workers, budget,
                                         OPTUNA_MO_METHODS[method]).run()
    c1 = os.times()
    cpu = (time.process_time() - t0) + (c1.children_user - c0.children_user) + \
        (c1.children_system - c0.children_system)
    return {"task": task["name"], "method": method, "seed": seed, "workers": workers,
            "events": [[at, p[0], p[1]] for at, p in events], "trials": ntrials,
            "points": len(events), "cpu_s": cpu}


# ---------------------------------------------------------------- statistics

def time_to_hv(curve, target, budget):
    """First grid time at which the hypervolume is >= target (inf if never)."""
    return sb.time_to(-np.asarray(curve), -target, budget)


def summarise(runs, tables, workers_list, methods, budgets):
    """Per (task, W, method): final hypervolume and its AUC with intervals; per tune method
    and Optuna method, the time to reach Optuna's final hypervolume over Optuna's own time
    to reach it (and over the budget), with paired Wilcoxon tests. tables: task name ->
    MoTable (its reference point)."""
    peers = [m for m in methods if m in OPTUNA_MO_METHODS]
    out = []
    for r in runs:
        if "hv" not in r:
            tb, budget = tables[r["task"]], budgets[(r["task"], r["workers"])]
            r["hv"] = hv_curve(tb, [(e[0], (e[1], e[2])) for e in r["events"]], budget).tolist()
    for task in tables:
        for w in workers_list:
            budget = budgets[(task, w)]
            by = {m: {r["seed"]: r for r in runs if r["task"] == task and r["workers"] == w
                      and r["method"] == m} for m in methods}
            seeds = sorted(set.intersection(*[set(v) for v in by.values()])) if by else []
            if not seeds:
                continue
            rows = []
            for m in methods:
                curves = np.array([by[m][s]["hv"] for s in seeds])
                auc, final = curves.mean(axis=1), curves[:, -1]
                row = {"task": task, "workers": w, "method": m, "seeds": len(seeds),
                       "trials": float(np.median([by[m][s]["trials"] for s in seeds])),
                       "points": float(np.median([by[m][s]["points"] for s in seeds])),
                       "cpu_s": float(np.mean([by[m][s]["cpu_s"] for s in seeds])),
                       "auc": float(auc.mean()), "auc_ci": sb.bootstrap_ci(auc),
                       "final": float(final.mean()), "final_ci": sb.bootstrap_ci(final)}
                for p in peers:
                    if p == m:
                        continue
                    ratios, of_budget = [], []
                    for s in seeds:
                        target = by[p][s]["hv"][-1]
                        if target <= 0:
                            continue
                        tp = time_to_hv(by[p][s]["hv"], target, budget)
                        tm = time_to_hv(by[m][s]["hv"], target, budget)
                        ratios.append(tm / tp)
                        of_budget.append(tm / budget)
                    pauc = np.array([by[p][s]["hv"] for s in seeds]).mean(axis=1)
                    pfin = np.array([by[p][s]["hv"][-1] for s in seeds])
                    pa, _ = sb.wilcoxon(auc, pauc)
                    pf, _ = sb.wilcoxon(final, pfin)
                    cmp = {"auc_p": pa, "final_p": pf,
                           "auc_wins": int((auc > pauc).sum()), "auc_losses": int((auc < pauc).sum()),
                           "final_wins": int((final > pfin).sum()),
                           "final_losses": int((final < pfin).sum()),
                           "auc_diff_ci": sb.bootstrap_ci(auc - pauc)}
                    if ratios:
                        cmp.update({"ratio": float(np.median(ratios)),
                                    "ratio_ci": sb.bootstrap_ci(ratios, stat=np.median),
                                    "ratio_budget": float(np.median(of_budget)),
                                    "ratio_budget_ci": sb.bootstrap_ci(of_budget, stat=np.median),
                                    "reached": int(sum(math.isfinite(r) for r in ratios)),
                                    "ratio_seeds": len(ratios)})
                    row[f"vs {p}"] = cmp
                rows.append(row)
            out.append({"task": task, "workers": w, "budget": budget, "seeds": seeds,
                        "rows": rows, "curves": {m: np.array(
                            [by[m][s]["hv"] for s in seeds]).tolist() for m in methods}})
    return out


# ---------------------------------------------------------------- output

COLORS = {"random+MO-ASHA": "#777777", "MOTPE+MO-ASHA": "#d62728",
          "Optuna NSGA-II": "#1f77b4", "Optuna MOTPE": "#17becf"}


def figure(task, cells, tfull, path):
    """Hypervolume share against virtual time, one panel per W: per method the mean over
    seeds and a band (the bootstrap 95 % interval of that mean, pointwise)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(cells), figsize=(6 * len(cells), 4.2), squeeze=False)
    for ax, cell in zip(axes[0], cells):
        grid = np.linspace(0, cell["budget"], GRID) * cell["workers"] / tfull
        for m, cs in cell["curves"].items():
            sb.plot_mean_band(ax, grid, cs, m, COLORS.get(m))
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("compute (full-budget trainings)")
        ax.set_ylabel("hypervolume / the table's (mean, 95 % CI)")
        ax.set_title(f"{task}, W = {cell['workers']}, {len(cell['seeds'])} seeds")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(summary, meta):
    peers = [m for m in meta["methods"] if m in OPTUNA_MO_METHODS]
    L = ["# Multi-objective benchmark results", "",
         f"Written by `bench/mo/mo.py` on {meta['date']} ({meta['command']}; tune "
         f"{meta['tune']}).", "",
         f"Budget {meta['budget']:g} full-budget trainings of worker time per run (virtual "
         f"time = budget x T_full / W); seeds {meta['seeds_text']}, the same for every method. "
         f"Hypervolume: of the front of the trials' max_t points that arrived by each time, "
         f"the loss normalised from the table's best to its {meta['loss_scale']} max_t value "
         f"and the other "
         f"objective from its minimum to its maximum, reference point ({REF}, {REF}) in those "
         f"units, as a share of the whole table's front. AUC: its mean over [0, budget]. Intervals: "
         f"bootstrap 95 % over seeds. Time ratio: per seed, the time a method needs to reach "
         f"the Optuna method's final hypervolume over the Optuna method's own time to reach "
         f"it; median over seeds (reached/seeds: seeds where it got there within the budget; "
         f"inf: not reached). p: two-sided paired Wilcoxon signed-rank. The hypervolume: "
         f"{meta['hv_checked']}.", ""]
    for t in meta["tasks"]:
        L.append(f"- `{t['name']}`: {t['desc']}")
    L.append("")
    for cell in summary:
        L += [f"## {cell['task']}, W = {cell['workers']}", "",
              "| method | trials | max_t points | final HV | HV AUC | " +
              " | ".join(f"time to {p}'s final HV (ratio) | AUC vs {p}: wins-losses, p"
                         for p in peers) + " | CPU s/run |",
              "|---|---:|---:|---|---|" + "---|---|" * len(peers) + "---:|"]
        for r in cell["rows"]:
            cols = []
            for p in peers:
                v = r.get(f"vs {p}")
                if not v:
                    cols += ["", ""]
                    continue
                rt = (f"{sb.fmt_ci(v['ratio'], v['ratio_ci'], 2)} "
                      f"({v['reached']}/{v['ratio_seeds']})" if "ratio" in v else "")
                cols += [rt, f"{v['auc_wins']}-{v['auc_losses']}, p={v['auc_p']:.2g}"]
            L.append(f"| {r['method']} | {r['trials']:.0f} | {r['points']:.0f} | "
                     f"{sb.fmt_ci(r['final'], r['final_ci'])} | "
                     f"{sb.fmt_ci(r['auc'], r['auc_ci'])} | "
                     + " | ".join(cols) + f" | {r['cpu_s']:.1f} |")
        L.append("")
    return "\n".join(L) + "\n"


def targets(summary):
    """The issue's target: MO-ASHA reaches each Optuna method's final hypervolume in <= 0.5x
    the compute, on both tables."""
    L = []
    for cell in summary:
        for r in cell["rows"]:
            if r["method"] not in TUNE_MO_METHODS:
                continue
            for k, v in r.items():
                if not k.startswith("vs ") or "ratio" not in v:
                    continue
                ok = v["ratio"] <= 0.5
                L.append(f"{cell['task']} W={cell['workers']} {r['method']} {k}: median time "
                         f"ratio {v['ratio']:.2f} [{v['ratio_ci'][0]:.2f}, {v['ratio_ci'][1]:.2f}]"
                         f" ({v['ratio_budget']:.2f} of the budget) -> "
                         f"{'met' if ok else 'NOT met'}")
    return L


# ---------------------------------------------------------------- main

def tune_refuses(tune, method, work):
    """What this tune says against a two-objective space with the method's searcher and
    ASHA (issue 30's parser; the multi-objective searcher), or None when it takes it."""
    search, _ = TUNE_METHODS[TUNE_MO_METHODS[method]]
    d = tempfile.mkdtemp(dir=work)
    try:
        with open(os.path.join(d, "s.json"), "w") as f:
            json.dump({"name": "probe", "metric": ["a", "b"], "mode": ["min", "min"],
                       "command": ["x"], "search": search,
                       "scheduler": {"type": "asha", "max_t": 9},
                       "space": {"x": {"uniform": [0, 1]}}}, f)
        import subprocess
        p = subprocess.run([tune, "validate", "s.json"], cwd=d, capture_output=True, text=True)
        return None if p.returncode == 0 else (p.stderr or p.stdout).strip()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tune", default=os.path.join(ROOT, "build", "bin", "tune"))
    ap.add_argument("--seeds", type=int, default=30, help="seeds 1..N (default 30)")
    ap.add_argument("--seed-from", type=int, default=1)
    ap.add_argument("--workers", default="4,16")
    ap.add_argument("--tasks", default=DEFAULT_TASKS)
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help=f"of {', '.join(METHODS)} (default: all)")
    ap.add_argument("--budget", type=float, default=100,
                    help="full-budget trainings of worker time per run (default 100)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "latest"))
    ap.add_argument("--work", default=None, help="cache (default OUT/.work)")
    ap.add_argument("--no-figures", action="store_true")
    ap.add_argument("--loss-scale", choices=("median", "max"), default="median",
                    help="the loss is normalised from the table's best to its median "
                    "(default) or to its worst finite value at max_t; the reference point is "
                    "1.1 in those units. Runs are cached without it, so both read the same runs")
    ap.add_argument("--mo-hv", default=os.path.join(ROOT, "build", "bin", "mo_hv"),
                    help="the engine's hypervolume (cmake --build build --target mo_hv), "
                    "checked against this file's before anything runs")
    a = ap.parse_args(argv)
    methods = [m for m in a.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"mo: unknown method {m!r} (methods: {', '.join(METHODS)})")
    tune_needed = any(m in TUNE_MO_METHODS for m in methods)
    names = [t for t in a.tasks.split(",") if t]
    known = {t["name"]: t for t in TASKS}
    if not os.access(a.tune, os.X_OK) and (tune_needed or any(
            "synthetic" in known.get(n, {}) for n in names)):
        raise SystemExit(f"mo: {a.tune} is not an executable tune (build it, or pass --tune)")
    workers = [int(w) for w in a.workers.split(",")]
    os.makedirs(a.out, exist_ok=True)
    work = a.work or os.path.join(a.out, ".work")
    os.makedirs(work, exist_ok=True)
    for m in methods:
        why = tune_refuses(a.tune, m, work) if m in TUNE_MO_METHODS else None
        if why:
            raise SystemExit(f"mo: {a.tune} cannot run {m}: it says\n  {why}\nbuild a tune that "
                             "has it (issue 30: the parser for random+MO-ASHA, the "
                             "multi-objective searcher for MOTPE+MO-ASHA), or leave the method "
                             "out of --methods")
    tasks = []
    for nm in names:
        if nm not in known:
            raise SystemExit(f"mo: unknown task {nm!r} (tasks: {', '.join(known)})")
        t = dict(known[nm])
        t["space_path"] = os.path.join(HERE, t["space"])
        if "table" in t:
            t["table_path"] = os.path.join(ROOT, t["table"])
            if t.get("derive") == "params":
                t["table_path"] = derive_params(t["table_path"],
                                                os.path.join(work, f"{nm}-params.csv"))
        else:
            t["table_path"] = make_synth_table(t, a.tune, work)
        tb = load_table(t, a.loss_scale)
        what = (f"table {t['table']}" + (" with params added from config/hidden, config/layers"
                                         if t.get("derive") else "")
                if "table" in t else f"synthetic family {t['synthetic']} at {len(tb.t.configs)} "
                "configurations")
        t["desc"] = (f"{what}, {len(tb.t.configs)} rows, objectives {tb.objectives[0]} and "
                     f"{tb.objectives[1]} at max_t {tb.max_t} (normalised: {tb.lo[0]:.4g}..{tb.hi[0]:.4g}"
                     f" and {tb.lo[1]:.4g}..{tb.hi[1]:.4g} to 0..1), T_full {tb.t_full:.3g} s")
        t["t_full"] = tb.t_full
        tasks.append(t)
    if os.access(a.mo_hv, os.X_OK):
        hv_checked = check_hv(a.mo_hv, [load_table(t, a.loss_scale) for t in tasks])
    else:
        hv_checked = (f"not checked against the engine's pareto_hypervolume ({a.mo_hv} is not "
                      "built: cmake --build build --target mo_hv)")
    print(f"mo: {hv_checked}", file=sys.stderr)
    budgets = {(t["name"], w): a.budget * t["t_full"] / w for t in tasks for w in workers}
    seeds = list(range(max(1, a.seed_from), a.seeds + 1))
    todo, runs = [], []
    for s in seeds:
        for t in tasks:
            for w in workers:
                for m in methods:
                    key = f"{t['name']}-W{w}-{m}-{s}-b{a.budget:g}-ev".replace(
                        "+", "_").replace(" ", "_")
                    cache = os.path.join(work, key + ".json")
                    if os.path.exists(cache):
                        with open(cache) as f:
                            runs.append(json.load(f))
                    else:
                        todo.append((cache, (t, m, s, w, budgets[(t["name"], w)], a.tune, work)))
    sb.run_cached(todo, runs, job, a.jobs, "mo",
                  lambda r: f"{r['trials']} trials, {r['points']} at max_t")
    summary = summarise(runs, {t["name"]: load_table(t, a.loss_scale) for t in tasks}, workers,
                        methods, budgets)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": "bench/mo/mo.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "tune": a.tune, "budget": a.budget, "tasks": tasks, "methods": methods,
            "loss_scale": a.loss_scale,
            "seeds_text": sb._ranges(seeds) + f" ({len(seeds)} seeds)", "hv_checked": hv_checked}
    sfx = "" if a.loss_scale == "median" else f"-loss{a.loss_scale}"
    with open(os.path.join(a.out, f"results{sfx}.md"), "w") as f:
        f.write(markdown(summary, meta))
        f.write("\n## Target (MO-ASHA at <= 0.5x Optuna's compute)\n\n" +
                "\n".join(f"- {x}" for x in targets(summary)) + "\n")
    with open(os.path.join(a.out, f"results{sfx}.json"), "w") as f:
        json.dump({"meta": {k: v for k, v in meta.items() if k != "tasks"},
                   "tasks": [{k: t[k] for k in ("name", "desc", "t_full")} for t in tasks],
                   "reference_point": [REF, REF], "loss_scale": a.loss_scale,
                   "cells": [{k: v for k, v in c.items() if k != "curves"} for c in summary]},
                  f, indent=1)
    if not a.no_figures:
        for t in tasks:
            cells = [c for c in summary if c["task"] == t["name"]]
            if cells:
                figure(t["name"], cells, t["t_full"],
                       os.path.join(a.out, f"{t['name']}{sfx}.png"))
    print(f"mo: results in {a.out}/results{sfx}.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
