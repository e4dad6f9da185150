#!/usr/bin/python3
"""bench/search/bench.py: issue 11's search-quality benchmark on the simulator.

Every method searches the same learning-curve table on the same virtual clock with the same
number of workers W and the same seeds:

  random+ASHA, TPE+ASHA (preset optuna), TPE+ASHA (preset bohb), TPE+FIFO   -- `tune simulate`
  Optuna 3.1 TPESampler() + SuccessiveHalvingPruner                        -- this file's
  Optuna 3.1 TPESampler(multivariate=True, constant_liar=True) + the same  -- replay harness

The tune methods run through `tune simulate` itself (the space file's "seed" varied); the
Optuna methods through ask/tell in `OptunaReplay` below, which answers each configuration
with the table's nearest row by docs/simulate.md's rule and replays its curve on an event
queue ordered by (virtual time, trial number), W trials at a time, with the simulator's
start and stop delays. The incumbent at virtual time t is the trial with the best
full-budget (max_t) validation value among the results that arrived by t; its regret is that
value minus the table's best full-budget value, normalised by (table median - table best)
and capped at 1 (1 also before any trial reached max_t).

The budget is compute: --budget full-budget trainings (100 by default) of worker time, so a
run lasts budget * T_full / W of virtual time (T_full: the table's mean full-budget
training time). Synthetic tasks are tables too: the synthetic family (docs/simulate.md)
sampled at a fixed set of configurations by `tune simulate` + `tune export --table`, so
both sides answer a configuration the same way and "the table's best" is defined.

The family unsampled (tasks synth4-family, synth8-family) answers a configuration with its
own curve, computed from the formula: tune's methods run `tune simulate --synthetic SPEC`,
the Optuna replay computes the curve with bench/sim/synth_family.py (FamilyTask); the best
and median that normalise regret are those of a large sample of the family (runs.py's
FAMILY_SAMPLE configurations), and a value below that best counts as regret 0.

Two protocols answer a configuration (--protocol; by default each task's own, runs.py):
"nearest", the rule above, and "pool", where the table is a finite pool of configurations
and each row is trained at most once, as DyHPO, DPL and the HPOBench/YAHPO tabular
benchmarks evaluate: tune's methods run `tune simulate --pool` (the searcher chooses among
the rows not taken yet), and the Optuna replay lets Optuna's sampler propose as usual and
answers the proposal with the nearest row not taken yet (OptunaReplay). A task run under
the pool protocol is reported as NAME-pool.

Not a test (tests/python/test_searchbench.py runs it on a tiny task). Results, figures and
a markdown table go to --out (default bench/search/results/).

usage: bench/search/bench.py [--seeds 30] [--workers 4,16] [--tasks mlp,cnn,synth4,...]
                             [--protocol task|nearest|pool|nearest,pool]
                             [--methods ...] [--budget 100] [--jobs 2] [--out DIR]
"""

import argparse
import concurrent.futures as cf
import csv
import gzip
import heapq
import io
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "sim"))
from runs import (FAMILY_SAMPLE, FAMILY_SAMPLE_SEED, HOLDOUT_TASKS, PROTOCOLS,  # noqa: E402
                  START_DELAY, STOP_DELAY, TASKS, TUNE_METHODS, synthetic_space, tune_space)
import synth_family  # noqa: E402  (bench/sim/: the family's one Python copy)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GRID = 201  # points of the regret curve over [0, budget]

OPTUNA_METHODS = {
    "Optuna TPE+SH": {},
    "Optuna mvTPE+SH": {"multivariate": True, "constant_liar": True},
}
METHODS = list(TUNE_METHODS) + list(OPTUNA_METHODS)
BASELINE = "random+ASHA"
PEER = "Optuna TPE+SH"


# ---------------------------------------------------------------- the space and the table

class Space:
    """The task's space.json: its parameters (kinds tune and Optuna share), metric, mode and
    ASHA settings."""

    def __init__(self, path):
        with open(path) as f:
            self.raw = json.load(f)
        self.metric = self.raw["metric"]
        self.mode = self.raw.get("mode", "min")
        sch = self.raw["scheduler"]
        self.max_t = int(sch["max_t"])
        self.grace = int(sch.get("grace_period", 1))
        self.rf = int(sch.get("reduction_factor", 3))
        self.params = []
        for name, spec in self.raw["space"].items():
            (kind, args), = spec.items()
            if kind not in ("uniform", "loguniform", "randint", "choice"):
                raise SystemExit(f"{path}: {name}: kind {kind} is not in the bench's harness "
                                 "(uniform, loguniform, randint, choice)")
            self.params.append((name, kind, args))

    def unit(self, kind, args, v):
        """search/unit.c's space_param_unit for the kinds above (the family's port's, so
        that the nearest-row rule and the family map a value alike)."""
        return synth_family.unit(kind, args, v)

    def suggest(self, trial):
        """An Optuna trial's configuration: each kind as Optuna models its counterpart."""
        cfg = {}
        for name, kind, args in self.params:
            if kind == "uniform":
                cfg[name] = trial.suggest_float(name, args[0], args[1])
            elif kind == "loguniform":
                cfg[name] = trial.suggest_float(name, args[0], args[1], log=True)
            elif kind == "randint":
                cfg[name] = trial.suggest_int(name, args[0], args[1] - 1)
            else:
                cfg[name] = trial.suggest_categorical(name, args)
        return cfg


def _value(text):
    try:
        return float(text)
    except ValueError:
        return {"true": True, "false": False}.get(text, text)


class Table:
    """A learning-curve table (docs/simulate.md's format) read for one space: per row its
    configuration, seconds per iteration and metric per iteration, and the nearest-row rule."""

    def __init__(self, path, space):
        op = gzip.open if path.endswith(".gz") else open
        with op(path, "rt", newline="") as f:
            rows = list(csv.reader(f))
        head, body = rows[0], rows[1:]
        col = {c: i for i, c in enumerate(head)}
        for name, _, _ in space.params:
            if f"config/{name}" not in col:
                raise SystemExit(f"{path}: no column config/{name} for parameter {name}")
        if space.metric not in col:
            raise SystemExit(f"{path}: no column {space.metric} (the space's metric)")
        key_cols = [col["trial"]] if "trial" in col else [col[c] for c in head
                                                          if c.startswith("config/")]
        self.configs, self.times, self.values = [], [], []
        last_key, total_prev = None, 0.0
        for r in body:
            key = tuple(r[i] for i in key_cols)
            if key != last_key:
                last_key, total_prev = key, 0.0
                cfg = {}
                for name, kind, args in space.params:
                    v = _value(r[col[f"config/{name}"]])
                    if kind == "choice":  # the table's text for the choice's value
                        v = next((a for a in args if a == v or str(a) == str(v)), v)
                    cfg[name] = v
                self.configs.append(cfg)
                self.times.append([])
                self.values.append([])
            if "time_this_iter_s" in col and r[col["time_this_iter_s"]] != "":
                secs = float(r[col["time_this_iter_s"]])
            else:
                tot = float(r[col["time_total_s"]])
                secs, total_prev = tot - total_prev, tot
            self.times[-1].append(secs)
            m = r[col[space.metric]]
            self.values[-1].append(float(m) if m != "" else float("nan"))
        sign = 1.0 if space.mode == "min" else -1.0
        n = len(self.configs)
        # each row's unit vector: numbers per numeric parameter, category index per choice
        self.choice = [kind == "choice" for _, kind, _ in space.params]
        self.u = np.array([[space.unit(k, a, c[nm]) for nm, k, a in space.params]
                           for c in self.configs]).reshape(n, len(space.params))
        self.space = space
        self.max_t = space.max_t
        full = []
        for vals in self.values:
            v = vals[self.max_t - 1] if len(vals) >= self.max_t else float("nan")
            full.append(sign * v if v == v else float("inf"))
        self.full = np.array(full)  # full-budget value per row, minimised, NaN -> +inf
        self.best = float(self.full.min())
        self.median = float(np.median(self.full))
        self.sign = sign
        self.t_full = float(np.mean([sum(t[:self.max_t]) for t in self.times]))
        self.min_iter = float(min(t[0] for t in self.times))

    def nearest(self, cfg, taken=None):
        """The row answering cfg: root mean square of per-parameter distances (choices 0 or
        1), the first row on ties (np.argmin), as sim/curves.c. taken: a boolean array of
        rows that may not answer (the pool protocol's rows already trained); None when
        every row is taken."""
        sp = self.space
        d = np.zeros(len(self.configs))
        for j, (name, kind, args) in enumerate(sp.params):
            uj = sp.unit(kind, args, cfg[name])
            if self.choice[j]:
                d += (np.abs(self.u[:, j] - uj) > 1e-12).astype(float)
            else:
                d += (self.u[:, j] - uj) ** 2
        if taken is not None:
            if taken.all():
                return None
            d[taken] = np.inf
        return int(np.argmin(d))

    def answer(self, cfg, taken=None):
        """The curve that answers cfg: (its row, (seconds per iteration, metric per
        iteration)) by the nearest-row rule (nearest(), taken as there)."""
        row = self.nearest(cfg, taken)
        return row, (self.times[row], self.values[row])

    def regret(self, full_value):
        """Normalised regret of a full-budget value (already minimised)."""
        den = self.median - self.best
        if not math.isfinite(full_value):
            return 1.0
        return min(1.0, max(0.0, (full_value - self.best) / den)) if den > 0 else 0.0


class FamilyTask:
    """The synthetic family unsampled, standing where a Table stands: a configuration is
    answered by its own curve, computed from the formula (bench/sim/synth_family.py, the
    port of sim/synth.c that tests/python/test_searchbench.py checks against tune), so there
    is no row and no pool. best and median: the lowest and the median value at max_t over a
    sample of `n` configurations drawn from the space (random.Random(sample_seed)), a
    diverged one as +inf; a run that finds a value below that best has regret 0. reference:
    (best, median) already computed (minimised), to skip the sample."""

    def __init__(self, space_path, spec, n=FAMILY_SAMPLE, sample_seed=FAMILY_SAMPLE_SEED,
                 reference=None):
        self.space = Space(space_path)
        self.family = synth_family.Family.for_space(self.space.raw, spec)
        self.max_t = self.space.max_t
        if self.family.iters < self.max_t:
            raise SystemExit(f"bench: the family {spec!r} has {self.family.iters} iterations, "
                             f"fewer than max_t {self.max_t}: nothing would reach max_t")
        self.sign = 1.0 if self.space.mode == "min" else -1.0
        if reference is None:
            vals = self.family.reference(n, sample_seed, self.max_t)
            reference = (vals[0], float(np.median(vals)))
        self.best, self.median = reference
        fam = self.family
        # As a table's: the shortest first iteration and the mean full training. Every
        # iteration takes time * (1 + time_spread (u_last - 0.5)) s, and u_last has mean
        # 0.5 under the space's own distribution for every kind (uniform on its scale, or
        # an index drawn uniformly): a full training takes time * max_t on average.
        self.min_iter = fam.time * (1 - fam.spread / 2)
        self.t_full = fam.time * self.max_t

    def answer(self, cfg, taken=None):
        """(None, (seconds per iteration, metric per iteration)): cfg's own curve."""
        assert taken is None, "the family has no pool"
        return None, self.family.config_curve(cfg)

    regret = Table.regret  # the same normalisation, by the sample's best and median


def make_synthetic_table(task, space_path, tune, out_dir, rows=None):
    """The synthetic family at `rows` configurations drawn by a FIFO run of tune simulate
    (seed 2026), exported as a table: the task's fixed set of curves."""
    path = os.path.join(out_dir, f"{task['name']}.csv.gz")
    if os.path.exists(path):
        return path
    sp, args = synthetic_space(task, space_path, rows or task["rows"], "gen.db")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "space.json"), "w") as f:
            json.dump(sp, f)
        _run([tune] + args, d)
        p = _run([tune, "export", f"gen-{task['name']}-sim", "--table", "--db", "gen.db"], d)
        tmp = path + ".tmp"
        with gzip.open(tmp, "wt") as f:
            f.write(p.stdout)
        os.replace(tmp, path)
    return path


def _run(argv, cwd):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} (in {cwd}) failed:\n{p.stdout}{p.stderr}")
    return p


# ---------------------------------------------------------------- the runs

def curve_from_events(table, events, budget):
    """events: [(virtual time, full-budget value minimised)] in arrival order. Returns the
    normalised regret of the incumbent at GRID points over [0, budget]."""
    grid = np.linspace(0, budget, GRID)
    out = np.ones(GRID)
    best, k = float("inf"), 0
    for i, t in enumerate(grid):
        while k < len(events) and events[k][0] <= t:
            best = min(best, events[k][1])
            k += 1
        out[i] = table.regret(best)
    return out


def run_tune(tune, task, table_path, table, method, seed, workers, budget, work):
    sp, args = tune_space(task["space_path"], table_path, method, seed, workers, budget,
                          table.min_iter, "t.db", pool=task.get("protocol") == "pool",
                          synthetic=task.get("family"))
    d = tempfile.mkdtemp(dir=work)
    try:
        with open(os.path.join(d, "space.json"), "w") as f:
            json.dump(sp, f)
        _run([tune] + args, d)
        con = sqlite3.connect(os.path.join(d, "t.db"))
        t0 = con.execute("SELECT created_at FROM experiments").fetchone()[0]
        rows = con.execute(
            "SELECT r.wall_time, r.metric FROM results r JOIN trials t ON t.id = r.trial_id "
            "WHERE r.iteration = ? AND r.attempt = t.attempt ORDER BY r.wall_time, r.id",
            (table.max_t,)).fetchall()
        ntrials = con.execute("SELECT count(*) FROM trials WHERE started_at IS NOT NULL"
                              ).fetchone()[0]
        con.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    events = [(w - t0, table.sign * m if m is not None else float("inf")) for w, m in rows]
    return events, ntrials


class OptunaReplay:
    """Optuna's sampler and SuccessiveHalvingPruner driven through ask/tell over a table, or
    the family unsampled (FamilyTask; whatever answers a configuration with a curve through
    answer()), on a virtual clock with W workers, as sim/exec.c replays curves for tune: a
    trial starts when a worker is free, its k-th result arrives start_delay + the seconds of
    iterations 1..k later, a pruned trial frees its worker stop_delay after the result that
    pruned it, one that reached max_t frees it at once; events of equal time go in trial
    order; the run ends at the budget. `trace` keeps (trial, start, end) for the test.

    pool: the pool protocol, each table row trained at most once. Optuna 3.1 has no way for
    TPE to choose among a given finite set of configurations (GridSampler and
    BruteForceSampler enumerate a set without a model; suggest_categorical over row numbers
    would throw the space's structure away), so its sampler proposes as usual and the
    proposal is answered by the nearest row not taken yet (the nearest-row rule over the
    rows left). Optuna is then told the configuration that was trained, not the proposal:
    the proposing trial is marked FAIL (TPE and the pruner read only COMPLETE, PRUNED and,
    with constant_liar, RUNNING trials) and the row's configuration is enqueued and asked
    as the trial that runs. Once every row is taken no trial starts, as in tune simulate
    --pool."""

    def __init__(self, table, seed, workers, budget, sampler_kw, pool=False):
        import warnings
        import optuna
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.optuna = optuna
        self.table, self.workers, self.budget = table, workers, budget
        sampler = optuna.samplers.TPESampler(seed=seed, **sampler_kw)
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=table.space.grace,
                                                        reduction_factor=table.space.rf)
        self.study = optuna.create_study(
            direction="minimize" if table.space.mode == "min" else "maximize",
            sampler=sampler, pruner=pruner)
        self.trace = []
        self.events = []  # (time, full-budget value minimised)
        self.results = []  # (time, trial, iteration)
        self.rows = {}  # trial -> the table row that answered it (None: the family)
        self.pruned = set()
        self.taken = np.zeros(len(table.configs), dtype=bool) if pool else None
        self.proposals = {}  # trial -> the configuration Optuna proposed (pool only)
        self.numbers = {}  # trial -> the number of the Optuna trial that ran it

    def run(self):
        tb, heap, run = self.table, [], {}
        now, n = 0.0, 0

        def launch():
            nonlocal n
            if self.taken is not None and self.taken.all():
                return  # the pool is exhausted: the worker stays idle
            tr = self.study.ask()
            cfg = self.table.space.suggest(tr)
            row, curve = tb.answer(cfg, self.taken)
            if self.taken is not None:
                self.taken[row] = True
                self.proposals[n] = cfg
                if cfg != tb.configs[row]:
                    self.study.tell(tr, state=self.optuna.trial.TrialState.FAIL)
                    self.study.enqueue_trial(dict(tb.configs[row]))
                    tr = self.study.ask()
                    self.table.space.suggest(tr)  # the enqueued values, fixed
            no = n
            self.numbers[no] = tr.number
            n += 1
            run[no] = {"trial": tr, "curve": curve, "sent": 0, "start": now}
            self.rows[no] = row
            heapq.heappush(heap, (now + START_DELAY + curve[0][0], no, "result"))

        for _ in range(self.workers):
            launch()
        while heap:
            at, no, kind = heapq.heappop(heap)
            if at > self.budget:
                break
            now = at
            st = run[no]
            if kind == "end":
                self.trace.append((no, st["start"], now))
                del run[no]
                launch()
                continue
            (times, values), k = st["curve"], st["sent"] + 1
            st["sent"] = k
            v = values[k - 1]
            self.results.append((now, no, k))
            tr = st["trial"]
            tr.report(v, k)
            if k >= len(values) or k >= tb.max_t:
                if k == tb.max_t:
                    self.events.append((now, tb.sign * v if v == v else float("inf")))
                self.study.tell(tr, v)  # NaN: Optuna marks the trial failed
                self.trace.append((no, st["start"], now))
                del run[no]
                launch()
            elif tr.should_prune():
                self.study.tell(tr, state=self.optuna.trial.TrialState.PRUNED)
                self.pruned.add(no)
                heapq.heappush(heap, (now + STOP_DELAY, no, "end"))
            else:
                heapq.heappush(heap, (now + times[k], no, "result"))
        for no, st in run.items():  # stopped by the budget
            self.trace.append((no, st["start"], self.budget))
        return self.events, n


def job(args):
    """One (task, W, method, seed) run; returns its regret curve and counts."""
    task, method, seed, workers, budget, tune, work = args
    table = load_table(task)
    t0 = time.process_time()
    c0 = os.times()
    if method in TUNE_METHODS:
        events, ntrials = run_tune(tune, task, task["table_path"], table, method, seed,
                                   workers, budget, work)
    else:
        events, ntrials = OptunaReplay(table, seed, workers, budget, OPTUNA_METHODS[method],
                                       pool=task.get("protocol") == "pool").run()
    c1 = os.times()
    cpu = (time.process_time() - t0) + (c1.children_user - c0.children_user) + \
        (c1.children_system - c0.children_system)
    return {"task": task["name"], "method": method, "seed": seed, "workers": workers,
            "regret": curve_from_events(table, events, budget).tolist(), "trials": ntrials,
            "cpu_s": cpu}


_tables = {}


def table_part(path, exclude_prefix, name, work):
    """The table without the trials whose names start with exclude_prefix, written to the
    work folder (tune simulate reads it too, so both sides see the same rows)."""
    out = os.path.join(work, f"table-{name}.csv")
    with gzip.open(path, "rt", newline="") as f, open(out + ".tmp", "w", newline="") as g:
        r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
        head = next(r)
        w.writerow(head)
        k = head.index("trial")
        w.writerows(row for row in r if not row[k].startswith(exclude_prefix))
    os.replace(out + ".tmp", out)
    return out


def family_reference(task, work, n):
    """A family task's (best, median) at max_t over n configurations (FamilyTask), kept in
    the work folder beside the runs (a few seconds per 100,000 to compute)."""
    with open(task["space_path"]) as f:
        space = json.load(f)
    ident = {"spec": task["family"], "space": space, "n": n, "seed": FAMILY_SAMPLE_SEED}
    path = os.path.join(work, f"reference-{task['name']}-n{n}.json")
    if os.path.exists(path):
        with open(path) as f:
            got = json.load(f)
        if got["ident"] == ident:
            return tuple(got["reference"])
    ft = FamilyTask(task["space_path"], task["family"], n=n)
    with open(path + ".tmp", "w") as f:
        json.dump({"ident": ident, "reference": [ft.best, ft.median]}, f)
    os.replace(path + ".tmp", path)
    return ft.best, ft.median


def load_table(task):
    if "family" in task:  # the reference sample is main's, passed in the task
        key = ("family", task["family"], task["space_path"])
        if key not in _tables:
            _tables[key] = FamilyTask(task["space_path"], task["family"],
                                      reference=task["reference"])
        return _tables[key]
    key = (task["table_path"], task["space_path"])  # one table for both protocols
    if key not in _tables:
        _tables[key] = Table(task["table_path"], Space(task["space_path"]))
    return _tables[key]


# ---------------------------------------------------------------- statistics

def bootstrap_ci(x, stat=np.mean, n=2000, seed=0):
    """Percentile bootstrap 95 % interval of stat over the seeds."""
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n, len(x)))
    vals = np.array([stat(x[i]) for i in idx])
    # "lower"/"higher": no interpolation, which would make inf - inf a NaN
    return (float(np.percentile(vals, 2.5, method="lower")),
            float(np.percentile(vals, 97.5, method="higher")))


def wilcoxon(x, y):
    """Two-sided paired Wilcoxon signed-rank test: (p, median of x - y). Zero differences
    are dropped (Wilcoxon's rule); scipy's exact or normal p when scipy is there, else the
    normal approximation with the tie correction."""
    d = np.asarray(x, float) - np.asarray(y, float)
    med = float(np.median(d)) if len(d) else float("nan")
    d = d[d != 0]
    if len(d) == 0:
        return 1.0, med
    try:
        from scipy.stats import wilcoxon as sw
        return float(sw(d).pvalue), med
    except ImportError:
        pass
    a = np.abs(d)
    order = np.argsort(a, kind="stable")
    ranks = np.empty(len(a))
    sa = a[order]
    i = 0
    while i < len(sa):
        j = i
        while j + 1 < len(sa) and sa[j + 1] == sa[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    w = ranks[d > 0].sum()
    n = len(d)
    mu = n * (n + 1) / 4
    _, counts = np.unique(sa, return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - (counts ** 3 - counts).sum() / 48
    if var <= 0:
        return 1.0, med
    z = (w - mu) / math.sqrt(var)
    return math.erfc(abs(z) / math.sqrt(2)), med


def time_to(curve, target, budget):
    """First grid time at which the regret is <= target (inf if never)."""
    grid = np.linspace(0, budget, GRID)
    hit = np.nonzero(np.asarray(curve) <= target + 1e-12)[0]
    return float(grid[hit[0]]) if len(hit) else float("inf")


def summarise(runs, tasks, workers_list, methods, budgets):
    """Per (task, W, method): AUC, final regret, time-to-random's-final ratio, with
    intervals; the Wilcoxon tests against the baseline and the peer."""
    out = []
    for task in tasks:
        for w in workers_list:
            budget = budgets[(task, w)]
            by = {m: {r["seed"]: r for r in runs if r["task"] == task and r["workers"] == w
                      and r["method"] == m} for m in methods}
            seeds = sorted(set.intersection(*[set(v) for v in by.values()])) if by else []
            if not seeds:
                continue
            rows = []
            base = by.get(BASELINE)
            for m in methods:
                curves = np.array([by[m][s]["regret"] for s in seeds])
                auc = curves.mean(axis=1)  # area under the curve over [0, budget], / budget
                final = curves[:, -1]
                row = {"task": task, "workers": w, "method": m, "seeds": len(seeds),
                       "trials": float(np.median([by[m][s]["trials"] for s in seeds])),
                       "cpu_s": float(np.mean([by[m][s]["cpu_s"] for s in seeds])),
                       "auc": float(auc.mean()), "auc_ci": bootstrap_ci(auc),
                       "final": float(final.mean()), "final_ci": bootstrap_ci(final),
                       "auc_per_seed": auc.tolist()}
                if base:
                    ratios = []
                    for s in seeds:
                        target = base[s]["regret"][-1]
                        if target >= 1:  # random+ASHA found nothing: no time to compare
                            continue
                        tb = time_to(base[s]["regret"], target, budget)
                        tm = time_to(by[m][s]["regret"], target, budget)
                        ratios.append(tm / tb)
                    if ratios:
                        row["ratio"] = float(np.median(ratios))
                        row["ratio_ci"] = bootstrap_ci(ratios, stat=np.median)
                        row["reached"] = int(sum(math.isfinite(r) for r in ratios))
                        row["ratio_seeds"] = len(ratios)
                for ref in (BASELINE, PEER):
                    if ref in by and ref != m:
                        rauc = np.array([by[ref][s]["regret"] for s in seeds]).mean(axis=1)
                        p, med = wilcoxon(auc, rauc)
                        d = auc - rauc
                        row[f"vs {ref}"] = {"p": p, "median_diff": med,
                                            "mean_diff": float(d.mean()),
                                            "mean_diff_ci": bootstrap_ci(d),
                                            "wins": int((d < 0).sum()),
                                            "losses": int((d > 0).sum())}
                rows.append(row)
            out.append({"task": task, "workers": w, "budget": budget, "seeds": seeds,
                        "rows": rows, "curves": {m: np.array(
                            [by[m][s]["regret"] for s in seeds]).tolist() for m in methods}})
    return out


# ---------------------------------------------------------------- output

COLORS = {"random+ASHA": "#777777", "TPE(optuna)+ASHA": "#d62728", "TPE(bohb)+ASHA": "#ff7f0e",
          "TPE(optuna)+FIFO": "#9467bd", "TPE(optuna;propose)+ASHA": "#2ca02c", "Optuna TPE+SH": "#1f77b4",
          "Optuna mvTPE+SH": "#17becf",
          # promotion ASHA: the stopping variant's colour family, darker (matplotlib's
          # default cycle would draw TPE(optuna)+ASHA(promotion) in Optuna TPE+SH's blue)
          "random+ASHA(promotion)": "#333333", "TPE(optuna)+ASHA(promotion)": "#8c564b",
          "TPE(bohb)+ASHA(promotion)": "#bcbd22",
          # eager promotion: distinct hues, the winning combination the strongest
          "random+ASHA(eager)": "#aaaaaa", "TPE(optuna)+ASHA(eager)": "#e377c2",
          "TPE(bohb)+ASHA(eager)": "#ffbb78", "TPE(optuna;propose)+ASHA(eager)": "#98df8a",
          "TPE(optuna;propose+startup10)+ASHA(eager)": "#000000",
          "TPE(optuna;propose+startup10)+ASHA": "#556b2f"}


def plot_mean_band(ax, grid, curves, label, color):
    """Draws the mean of curves (one per seed, each over grid) as a line and the bootstrap
    95 % interval of that mean, pointwise, as a band; bench/mo's figures draw the same."""
    c = np.array(curves)
    idx = np.random.default_rng(0).integers(0, len(c), size=(1000, len(c)))
    boot = c[idx].mean(axis=1)
    lo, hi = np.percentile(boot, 2.5, axis=0), np.percentile(boot, 97.5, axis=0)
    ax.plot(grid, c.mean(axis=0), label=label, color=color, lw=1.6)
    ax.fill_between(grid, lo, hi, color=color, alpha=0.12, lw=0)


def figure(task, cells, tfull, path):
    """Regret against virtual time, one panel per W: per method a line (the mean over
    seeds) and a band (the bootstrap 95 % interval of that mean, pointwise)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(cells), figsize=(6 * len(cells), 4.2), squeeze=False)
    for ax, cell in zip(axes[0], cells):
        grid = np.linspace(0, cell["budget"], GRID) / tfull
        for m, cs in cell["curves"].items():
            plot_mean_band(ax, grid, cs, m, COLORS.get(m))
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("virtual time (full-budget trainings)")
        ax.set_ylabel("normalised regret of the incumbent (mean, 95 % CI)")
        ax.set_title(f"{task}, W = {cell['workers']}, {len(cell['seeds'])} seeds")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt_ci(v, ci, digits=3):
    return f"{v:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def fmt_ratio(r):
    if "ratio" not in r:
        return ""
    f = lambda v: "inf" if not math.isfinite(v) else f"{v:.2f}"
    return f"{f(r['ratio'])} [{f(r['ratio_ci'][0])}, {f(r['ratio_ci'][1])}] ({r['reached']}/{r['ratio_seeds']})"


def markdown(summary, meta):
    L = [f"# Search benchmark results", "",
         f"Written by `bench/search/bench.py` on {meta['date']} ({meta['command']}).", "",
         f"Budget {meta['budget']:g} full-budget trainings of worker time per run "
         f"(virtual wall time = budget x T_full / W); seeds {meta['seeds_text']}; "
         f"the same seeds for every method. Normalised regret: (incumbent's full-budget value "
         f"- table best) / (table median - table best), capped at 1. AUC: mean normalised "
         f"regret over [0, budget]. Intervals: bootstrap 95 % over seeds. Time ratio: per "
         f"seed, the time to reach random+ASHA's final regret of that seed over "
         f"random+ASHA's own time; median over seeds (reached/seeds: seeds where it got "
         f"there within the budget). p: two-sided paired Wilcoxon signed-rank on AUC.", ""]
    for t in meta["tasks"]:
        L.append(f"- `{t['name']}`: {t['desc']}")
    L.append("")
    if summary:
        methods = [r["method"] for r in summary[0]["rows"]]
        for title, key, digits in (("mean AUC of the normalised regret", "auc", 3),
                                   ("mean final normalised regret", "final", 3),
                                   ("median time to random+ASHA's final regret, over "
                                    "random+ASHA's", "ratio", 2)):
            L += [f"## Summary: {title} (lower is better; best in bold)", "",
                  "| task | W | " + " | ".join(methods) + " |",
                  "|---|---:|" + "---:|" * len(methods)]
            for cell in summary:
                vals = [r.get(key, float("nan")) for r in cell["rows"]]
                fin = [v for v in vals if math.isfinite(v)]
                best = min(fin) if fin else None
                txt = [("inf" if v == float("inf") else "" if v != v else
                        f"**{v:.{digits}f}**" if v == best and key != "ratio" or
                        key == "ratio" and v == best and r["method"] != BASELINE else
                        f"{v:.{digits}f}") for v, r in zip(vals, cell["rows"])]
                L.append(f"| {cell['task']} | {cell['workers']} | " + " | ".join(txt) + " |")
            L.append("")
    for cell in summary:
        L += [f"## {cell['task']}, W = {cell['workers']}", "",
              "| method | trials | AUC | final regret | time to random's final (ratio) | "
              f"AUC vs {PEER}: wins-losses, p | AUC vs {BASELINE}: wins-losses, p | CPU s/run |",
              "|---|---:|---|---|---|---|---|---:|"]
        for r in cell["rows"]:
            vp = r.get(f"vs {PEER}")
            vb = r.get(f"vs {BASELINE}")
            cmp = lambda v: f"{v['wins']}-{v['losses']}, p={v['p']:.2g}" if v else ""
            L.append(f"| {r['method']} | {r['trials']:.0f} | {fmt_ci(r['auc'], r['auc_ci'])} | "
                     f"{fmt_ci(r['final'], r['final_ci'])} | {fmt_ratio(r)} | {cmp(vp)} | "
                     f"{cmp(vb)} | {r['cpu_s']:.1f} |")
        L.append("")
    return "\n".join(L) + "\n"


def targets(summary):
    """The issue's targets, per cell: TPE+ASHA's time ratio <= 0.7, and AUC below Optuna
    TPE+SH's at W = 16."""
    L = []
    for cell in summary:
        for r in cell["rows"]:
            if not r["method"].endswith("+ASHA") or not r["method"].startswith("TPE"):
                continue
            ok1 = r.get("ratio", float("inf")) <= 0.7
            L.append(f"{cell['task']} W={cell['workers']} {r['method']}: time ratio "
                     f"{r.get('ratio', float('nan')):.2f} -> {'met' if ok1 else 'NOT met'}")
            vp = r.get(f"vs {PEER}")
            if cell["workers"] == 16 and vp:
                better = vp["mean_diff"] < 0
                sig = vp["p"] < 0.05
                L.append(f"{cell['task']} W=16 {r['method']} AUC vs {PEER}: mean diff "
                         f"{vp['mean_diff']:+.4f}, p={vp['p']:.2g} -> "
                         f"{'better' if better else 'NOT better'}"
                         f"{' (significant)' if better and sig else ''}")
    return L


# ---------------------------------------------------------------- main

def run_cached(todo, runs, job, jobs, who, what):
    """Runs job(args) for each (cache, args) of todo in `jobs` processes, writing each result
    to its cache file whole (a temporary name, then renamed: a run cut short leaves no half
    file) and appending it to runs; `what(result)` words the progress line. bench/mo uses it
    too."""
    print(f"{who}: {len(todo)} runs to do, {len(runs)} cached", file=sys.stderr)
    t0 = time.time()
    with cf.ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = {ex.submit(job, args): cache for cache, args in todo}
        for i, fu in enumerate(cf.as_completed(futs)):
            r = fu.result()
            with open(futs[fu] + ".tmp", "w") as f:
                json.dump(r, f)
            os.replace(futs[fu] + ".tmp", futs[fu])
            runs.append(r)
            print(f"{who}: [{i + 1}/{len(todo)}] {r['task']} W={r['workers']} {r['method']} "
                  f"seed {r['seed']}: {what(r)}, {r['cpu_s']:.1f} CPU s "
                  f"({time.time() - t0:.0f} s)", file=sys.stderr)


def _ranges(xs):
    """[1, 2, 3, 5] -> "1-3, 5"."""
    out, xs = [], sorted(xs)
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ", ".join(out) or "none"


def tune_has_pool(tune):
    """Whether this tune's `simulate` knows --pool (its usage names it)."""
    p = subprocess.run([tune, "simulate", "--help"], capture_output=True, text=True)
    return "--pool" in p.stdout + p.stderr


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tune", default=os.path.join(ROOT, "build", "bin", "tune"))
    ap.add_argument("--seeds", type=int, default=30, help="seeds 1..N (default 30)")
    ap.add_argument("--seed-from", type=int, default=1,
                    help="run only seeds S..N (to split a run between processes)")
    ap.add_argument("--workers", default="4,16")
    ap.add_argument("--tasks", default=",".join(t["name"] for t in TASKS),
                    help="default: every task but TaskSet's held-out six (runs.py)")
    ap.add_argument("--protocol", default="task",
                    help="how a table answers a configuration: nearest (the nearest-row "
                    "rule), pool (each row trained at most once; tune simulate --pool), "
                    "nearest,pool (both), or task (default: each task's own, runs.py)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--budget", type=float, default=100,
                    help="full-budget trainings of worker time per run (default 100)")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--work", default=None, help="cache of finished runs and generated "
                    "tables (default OUT/.work); a rerun skips the runs it holds")
    ap.add_argument("--synthetic-rows", type=int, default=None,
                    help="rows of each synthetic table (default: the task's)")
    ap.add_argument("--family-sample", type=int, default=FAMILY_SAMPLE,
                    help="configurations whose best and median value normalise a family "
                    f"task's regret (default {FAMILY_SAMPLE:,}; runs.py)")
    ap.add_argument("--space-dir", default=HERE, help="where tasks/*.json are")
    ap.add_argument("--no-figures", action="store_true")
    ap.add_argument("--cached-only", action="store_true",
                    help="run nothing: summarise the runs in the cache, over the seeds that "
                    "every (task, W, method) has")
    ap.add_argument("--estimate", action="store_true",
                    help="run one seed of each (task, W, method), print the CPU each took and "
                    "the estimated total for --seeds, and stop")
    a = ap.parse_args(argv)
    if not os.access(a.tune, os.X_OK):
        raise SystemExit(f"bench: {a.tune} is not an executable tune (build it: cmake --build "
                         "build, or pass --tune PATH)")
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise SystemExit("bench: Optuna is not importable under this python (apt-get install "
                         "python3-optuna, and run with /usr/bin/python3)")
    workers = [int(w) for w in a.workers.split(",")]
    methods = [m for m in a.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"bench: unknown method {m!r} (methods: {', '.join(METHODS)})")
    os.makedirs(a.out, exist_ok=True)
    work = a.work or os.path.join(a.out, ".work")
    os.makedirs(work, exist_ok=True)
    names = [t for t in a.tasks.split(",") if t]
    known = {t["name"]: t for t in TASKS + HOLDOUT_TASKS}
    if a.protocol == "task":
        protocols = None
    else:
        protocols = [p for p in a.protocol.split(",") if p]
        for p in protocols:
            if p not in PROTOCOLS:
                raise SystemExit(f"bench: unknown protocol {p!r} (nearest, pool, or task for "
                                 "each task's own)")
    tasks = []
    for nm in names:
        if nm not in known:
            raise SystemExit(f"bench: unknown task {nm!r} (tasks: {', '.join(known)})")
        t = dict(known[nm])
        if t.get("holdout"):
            print(f"bench: {nm} is one of TaskSet's held-out tasks (bench/tables/taskset/"
                  "README.md): a check of a searcher chosen on the others, not a task to "
                  "tune on", file=sys.stderr)
        t["space_path"] = os.path.join(a.space_dir, t["space"])
        if "table" in t:
            t["table_path"] = os.path.join(ROOT, t["table"])
            if not os.path.exists(t["table_path"]):
                how = (" (bench/tables/taskset/convert.py --holdout makes it)"
                       if t.get("holdout") else " yet")
                print(f"bench: skipping task {nm}: {t['table']} does not exist{how}",
                      file=sys.stderr)
                continue
            if "exclude_prefix" in t:
                t["table_path"] = table_part(t["table_path"], t["exclude_prefix"], nm, work)
        elif "family" in t:
            t["table_path"] = None
            t["reference"] = family_reference(t, work, a.family_sample)
        else:
            t["table_path"] = make_synthetic_table(t, t["space_path"], a.tune, work,
                                                   a.synthetic_rows)
        tb = load_table(t)
        tail = (f"{len(tb.space.params)} parameters, ASHA "
                f"max_t {tb.max_t} grace {tb.space.grace} rf {tb.space.rf}, metric "
                f"{tb.space.metric} ({tb.space.mode}), T_full {tb.t_full:.3g} s, best "
                f"{tb.sign * tb.best:.4g}, median {tb.sign * tb.median:.4g}")
        if "family" in t:
            t["desc"] = (f"synthetic family {t['family']} unsampled (each configuration "
                         f"answered by its own curve: tune simulate --synthetic, Optuna "
                         f"through bench/sim/synth_family.py), {tail}; T_full = time x max_t "
                         f"(the mean under the space's distribution); best and median: the "
                         f"lowest and the median value at max_t over {a.family_sample:,} "
                         f"configurations drawn from the space (random.Random("
                         f"{FAMILY_SAMPLE_SEED})), a run finding a value below that best "
                         f"has regret 0")
        else:
            part = (f" without its {t['exclude_prefix']}* trials" if "exclude_prefix" in t
                    else "")
            t["desc"] = (f"{'table ' + t['table'] + part if 'table' in t else 'synthetic family ' + t['synthetic'] + ' at ' + str(len(tb.configs)) + ' configurations'}"
                         f", {len(tb.configs)} rows, " + tail)
        t["t_full"] = tb.t_full
        # one entry per protocol, named NAME (nearest) or NAME-pool, which the cache keys,
        # the tables and the figures carry; the family has neither rows nor a pool
        for p in (["family"] if "family" in t
                  else protocols or t.get("protocols", ["nearest"])):
            v = dict(t, protocol=p, base=nm)
            if p == "pool":
                v["name"] = f"{nm}-pool"
                v["desc"] = t["desc"] + "; pool protocol: each row trained at most once"
            tasks.append(v)
    if (any(t["protocol"] == "pool" for t in tasks) and any(m in TUNE_METHODS for m in methods)
            and not tune_has_pool(a.tune)):
        raise SystemExit(f"bench: {a.tune} has no `tune simulate --pool` (the pool protocol, "
                         "issue 29): build one that has it, or pass --protocol nearest")
    budgets = {(t["name"], w): a.budget * t["t_full"] / w for t in tasks for w in workers}
    seeds = [1] if a.estimate else list(range(max(1, a.seed_from), a.seeds + 1))
    todo, runs = [], []
    # seed-major, so that a run cut short holds whole seeds of every cell
    for s in seeds:
        for t in tasks:
            for w in workers:
                for m in methods:
                    key = f"{t['name']}-W{w}-{m}-{s}-b{a.budget:g}".replace("+", "_").replace(
                        "(", "_").replace(")", "").replace(" ", "_")
                    cache = os.path.join(work, key + ".json")
                    if os.path.exists(cache):
                        with open(cache) as f:
                            runs.append(json.load(f))
                    elif not a.cached_only:
                        todo.append((cache, (t, m, s, w, budgets[(t["name"], w)], a.tune, work)))
    run_cached(todo, runs, job, a.jobs, "bench",
               lambda r: f"{r['trials']} trials, final regret {r['regret'][-1]:.4f}")
    if a.estimate:
        tot = sum(r["cpu_s"] for r in runs if r["seed"] == 1)
        for r in sorted(runs, key=lambda r: (r["task"], r["workers"], r["method"])):
            print(f"{r['task']:8} W={r['workers']:<3} {r['method']:18} {r['cpu_s']:7.1f} CPU s "
                  f"{r['trials']:6} trials")
        print(f"one seed of everything: {tot:.0f} CPU s; {a.seeds} seeds: about "
              f"{tot * a.seeds / 3600:.1f} CPU hours ({tot * a.seeds / 3600 / max(1, a.jobs):.1f} "
              f"h of wall time at {a.jobs} jobs on idle cores)")
        return 0
    if a.cached_only:
        cells = {(t["name"], w, m) for t in tasks for w in workers for m in methods}
        have = {}
        for r in runs:
            have.setdefault(r["seed"], set()).add((r["task"], r["workers"], r["method"]))
        whole = sorted(s for s, c in have.items() if c >= cells)
        runs = [r for r in runs if r["seed"] in whole]
        seeds_done = whole
    else:
        seeds_done = seeds
    names = [t["name"] for t in tasks]
    summary = summarise(runs, names, workers, methods, budgets)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": "bench/search/bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "budget": a.budget, "tasks": tasks,
            "seeds_text": _ranges(seeds_done) + f" ({len(seeds_done)} seeds)"}
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(markdown(summary, meta))
        f.write("\n## Targets\n\n" + "\n".join(f"- {x}" for x in targets(summary)) + "\n")
    slim = [{k: v for k, v in c.items() if k != "curves"} for c in summary]
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"meta": {k: v for k, v in meta.items() if k != "tasks"},
                   "tasks": [{k: t[k] for k in ("name", "desc", "t_full")} for t in tasks],
                   "cells": slim}, f, indent=1)
    if not a.no_figures:
        for t in tasks:
            cells = [c for c in summary if c["task"] == t["name"]]
            if cells:
                figure(t["name"], cells, t["t_full"], os.path.join(a.out, f"{t['name']}.png"))
    print(f"bench: results in {a.out}/results.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
