#!/usr/bin/python3
"""bench/search/same_decisions.py: do two tune binaries decide the same, bit for bit, on the
search benchmark's runs?

A refactor that must leave behaviour unchanged (issue 27) is checked here on what
bench/search/bench.py runs: `tune simulate` on the cached learning-curve tables, for each
task, tune method (random+ASHA, TPE(optuna)+ASHA, TPE(bohb)+ASHA, TPE(optuna)+FIFO), seed and
worker count, with the same space.json bench.py writes. Each binary runs into a fresh folder
of its own; then the two databases are compared row by row, in order:

  decisions  every column both schemas have, except id and wall_time (trial_id compared as
             the trial's trial_no); a column only one side has (decisions.criterion, added
             by schema version 4) is named once and left out
  trials     trial_no, config, status, early_stopped, suggested_by, attempt (by trial_no)
  results    trial_no, attempt, iteration, time_value, metric (by trial_no and attempt,
             then in results.id order: a simulation commits at most once a second of real
             time (cli/simulate.c, commit_every_s) and the store writes a transaction's
             results grouped by trial, so how the trials' rows interleave in results.id
             follows the machine's speed, even between two runs of one binary)

REAL values compare by their exact bits (float.hex), never with a tolerance; an integer and
a real of the same value differ. The synthetic tasks' tables are generated once by --base
(as bench.py's make_synthetic_table does) and both binaries simulate on that same table;
the generation runs themselves (the synthetic family, FIFO, 64 workers) are compared too.

Standard library and sqlite3 only. The tasks, the methods and each run's space.json and
arguments come from runs.py, as bench.py's do; the budget arithmetic uses bench.py's own
Table when numpy is importable, else a stdlib copy of it (the time budget can then differ
from bench.py's in its last bits: both binaries still get the same one).

Exit status: 0 when every run is identical, 1 on any difference, 2 when a run failed or
the command line is wrong.

usage: bench/search/same_decisions.py --base PATH --new PATH [--tasks mlp,cnn,synth4,synth8]
         [--methods M,...] [--seeds 3] [--workers 4,16] [--budget 100] [--jobs 2]
         [--no-gen] [--work DIR] [--keep] [--show 3]
"""

import argparse
import concurrent.futures as cf
import csv
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from runs import TASKS, TUNE_METHODS, synthetic_space, tune_space  # noqa: E402


def die(msg):
    """A usage error or a broken setup: exit 2, as a failed run (1 means a difference)."""
    print(msg, file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- what bench.py runs

def _bench_module():
    """bench.py itself when numpy is there (its Table computes the budget), else None."""
    try:
        import bench  # noqa: E402
        return bench
    except ImportError:
        return None


def table_part(path, exclude_prefix, name, work):
    """bench.py's table_part: the table without the trials whose names start with
    exclude_prefix (the MLP task is the table's first part)."""
    out = os.path.join(work, f"table-{name}.csv")
    with gzip.open(path, "rt", newline="") as f, open(out + ".tmp", "w", newline="") as g:
        r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
        head = next(r)
        w.writerow(head)
        k = head.index("trial")
        w.writerows(row for row in r if not row[k].startswith(exclude_prefix))
    os.replace(out + ".tmp", out)
    return out


def table_times(path, space):
    """(min_iter, t_full) of a table as bench.py's Table computes them, without numpy:
    the first iteration's seconds at its fastest, and the mean full-budget training time
    (np.mean's pairwise sum replaced by fsum: equal to its last bits or nearly)."""
    import math
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    col = {c: i for i, c in enumerate(head)}
    key_cols = [col["trial"]] if "trial" in col else [col[c] for c in head
                                                      if c.startswith("config/")]
    times, last_key, total_prev = [], None, 0.0
    for r in body:
        key = tuple(r[i] for i in key_cols)
        if key != last_key:
            last_key, total_prev = key, 0.0
            times.append([])
        if "time_this_iter_s" in col and r[col["time_this_iter_s"]] != "":
            secs = float(r[col["time_this_iter_s"]])
        else:
            tot = float(r[col["time_total_s"]])
            secs, total_prev = tot - total_prev, tot
        times[-1].append(secs)
    max_t = int(space["scheduler"]["max_t"])
    t_full = math.fsum(sum(t[:max_t]) for t in times) / len(times)
    return min(t[0] for t in times), t_full


def run(argv, cwd):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} (in {cwd}) exited {p.returncode}:\n"
                           f"{p.stdout}{p.stderr}")
    return p


# ---------------------------------------------------------------- the comparison

TRIAL_COLS = ["config", "status", "early_stopped", "suggested_by", "attempt"]
RESULT_COLS = ["attempt", "iteration", "time_value", "metric"]
DECISION_SKIP = {"id", "wall_time", "trial_id"}


def columns(con, table):
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def exact(v):
    """A value as its exact bits: a real by float.hex, an integer apart from a real."""
    if v is None:
        return ("null",)
    if isinstance(v, float):
        return ("real", v.hex())
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, bytes):
        return ("blob", v.hex())
    return ("text", v)


def shown(v):
    return f"{v!r} ({v.hex()})" if isinstance(v, float) else repr(v)


def queries(base, new):
    """Per compared table: (name, column names, SQL) over the columns both files have, and
    the columns left out because one side lacks them."""
    out, left_out = [], []
    cb, cn = columns(base, "decisions"), columns(new, "decisions")
    dec = [c for c in cb if c in cn and c not in DECISION_SKIP]
    left_out += [f"decisions.{c} (only {'base' if c in cb else 'new'})"
                 for c in cb + [c for c in cn if c not in cb] if (c in cb) != (c in cn)]
    out.append(("decisions", ["trial_no"] + dec,
                "SELECT t.trial_no, " + ", ".join(f"d.{c}" for c in dec) +
                " FROM decisions d LEFT JOIN trials t ON t.id = d.trial_id ORDER BY d.id"))
    cb, cn = columns(base, "trials"), columns(new, "trials")
    tr = [c for c in TRIAL_COLS if c in cb and c in cn]
    left_out += [f"trials.{c}" for c in TRIAL_COLS if c not in tr]
    out.append(("trials", ["trial_no"] + tr,
                "SELECT trial_no, " + ", ".join(tr) + " FROM trials ORDER BY trial_no"))
    out.append(("results", ["trial_no"] + RESULT_COLS,
                "SELECT t.trial_no, " + ", ".join(f"r.{c}" for c in RESULT_COLS) +
                " FROM results r LEFT JOIN trials t ON t.id = r.trial_id"
                " ORDER BY t.trial_no, r.attempt, r.id"))
    return out, left_out


def compare(base_db, new_db, context=2):
    """(rows compared, {table: row count}, differences, columns left out); a difference is
    a text naming the first differing row of a table with the rows before it."""
    b, n = sqlite3.connect(base_db), sqlite3.connect(new_db)
    try:
        qs, left_out = queries(b, n)
        diffs, total, counts = [], 0, {}
        for name, cols, sql in qs:
            rb, rn = b.execute(sql).fetchall(), n.execute(sql).fetchall()
            counts[name] = len(rb)
            total += min(len(rb), len(rn))
            first, ndiff = None, 0
            for i, (x, y) in enumerate(zip(rb, rn)):
                if [exact(v) for v in x] != [exact(v) for v in y]:
                    ndiff += 1
                    if first is None:
                        first = i
            if first is None and len(rb) == len(rn):
                continue
            L = [f"  {name}: {len(rb)} rows in base, {len(rn)} in new; {ndiff} of the first "
                 f"{min(len(rb), len(rn))} differ"]
            if first is None:
                first = min(len(rb), len(rn))
                L[0] += f"; the longer goes on at row {first}"
            for i in range(max(0, first - context), first):
                L.append(f"    row {i} (same): " +
                         ", ".join(f"{c}={shown(v)}" for c, v in zip(cols, rb[i])))
            x = rb[first] if first < len(rb) else None
            y = rn[first] if first < len(rn) else None
            for side, row in (("base", x), ("new ", y)):
                L.append(f"    row {first} {side}: " + ("(none)" if row is None else ", ".join(
                    f"{c}={shown(v)}" for c, v in zip(cols, row))))
            if x is not None and y is not None:
                L.append("    differing columns: " + ", ".join(
                    c for c, u, v in zip(cols, x, y) if exact(u) != exact(v)))
            diffs.append("\n".join(L))
        return total, counts, diffs, left_out
    finally:
        b.close()
        n.close()


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the tune binary before the change")
    ap.add_argument("--new", required=True, help="the tune binary after it")
    # the methods with an experimental "pool" switch (issue 29) choose among a pool's rows
    # only, which the nearest-row runs here never do, and a binary before them refuses it
    # the family tasks (issue 29) have no table: their tune runs are `tune simulate
    # --synthetic`, which the synthetic tables' generation runs below already compare
    tasks_all = [t for t in TASKS if "family" not in t]
    methods_all = [m for m, (search, _) in TUNE_METHODS.items() if "pool" not in search]
    ap.add_argument("--tasks", default=",".join(t["name"] for t in tasks_all))
    ap.add_argument("--methods", default=",".join(methods_all),
                    help="tune methods of bench.py (default: all of them but the "
                    "experimental pool switches)")
    ap.add_argument("--seeds", default="3", help="N (seeds 1..N) or a list 1,5,9 (default 3)")
    ap.add_argument("--workers", default="4,16")
    ap.add_argument("--budget", type=float, default=100,
                    help="full-budget trainings of worker time per run, as bench.py's")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--no-gen", action="store_true",
                    help="do not compare the synthetic tables' generation runs")
    ap.add_argument("--work", default=None, help="folder for the runs (default: a fresh "
                    "temporary one, removed at the end unless --keep or a difference)")
    ap.add_argument("--keep", action="store_true", help="keep every run's folder")
    ap.add_argument("--show", type=int, default=3,
                    help="runs whose differences are printed in full (default 3)")
    a = ap.parse_args(argv)
    tunes = {}
    for side in ("base", "new"):
        p = os.path.abspath(getattr(a, side))
        if not os.access(p, os.X_OK):
            die(f"same_decisions: --{side} {p} is not an executable")
        tunes[side] = p
    methods = [m for m in a.methods.split(",") if m]
    for m in methods:
        if m not in methods_all:
            die(f"same_decisions: unknown method {m!r} (methods: "
                             f"{', '.join(methods_all)})")
    seeds = (list(range(1, int(a.seeds) + 1)) if "," not in a.seeds and a.seeds.isdigit()
             else [int(s) for s in a.seeds.split(",") if s])
    workers = [int(w) for w in a.workers.split(",") if w]
    known = {t["name"]: t for t in tasks_all}
    names = [t for t in a.tasks.split(",") if t]
    for nm in names:
        if nm not in known:
            die(f"same_decisions: unknown task {nm!r} (tasks: {', '.join(known)})")

    t_start = time.time()
    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="same_decisions.")
    os.makedirs(work, exist_ok=True)
    bench = _bench_module()
    if bench is None:
        print("same_decisions: numpy is not importable: the budgets come from a stdlib copy "
              "of bench.py's Table (both binaries still get the same)", file=sys.stderr)

    # the tables: real ones as bench.py cuts them; synthetic ones generated by --base
    tasks, gen_jobs = [], []
    for nm in names:
        t = dict(known[nm])
        t["space_path"] = os.path.join(HERE, t["space"])
        if "table" in t:
            t["table_path"] = os.path.join(ROOT, t["table"])
            if not os.path.exists(t["table_path"]):
                print(f"same_decisions: skipping task {nm}: {t['table']} does not exist",
                      file=sys.stderr)
                continue
            if "exclude_prefix" in t:
                t["table_path"] = table_part(t["table_path"], t["exclude_prefix"], nm, work)
        else:
            sp, args = synthetic_space(t, t["space_path"], t["rows"], "t.db")
            folders = {}
            for side in ("base", "new") if not a.no_gen else ("base",):
                d = os.path.join(work, side, f"gen-{nm}")
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "space.json"), "w") as f:
                    json.dump(sp, f)
                run([tunes[side]] + args, d)
                folders[side] = d
            p = run([tunes["base"], "export", f"gen-{nm}-sim", "--table", "--db", "t.db"],
                    folders["base"])
            t["table_path"] = os.path.join(work, f"{nm}.csv")
            with open(t["table_path"], "w") as f:
                f.write(p.stdout)
            if not a.no_gen:
                gen_jobs.append((f"gen-{nm} (synthetic family, FIFO, W=64)", folders))
        with open(t["space_path"]) as f:
            space = json.load(f)
        if bench is not None:
            tb = bench.Table(t["table_path"], bench.Space(t["space_path"]))
            t["min_iter"], t["t_full"] = tb.min_iter, tb.t_full
        else:
            t["min_iter"], t["t_full"] = table_times(t["table_path"], space)
        tasks.append(t)

    jobs = []
    for s in seeds:
        for t in tasks:
            for w in workers:
                for m in methods:
                    budget = a.budget * t["t_full"] / w
                    sp, args = tune_space(t["space_path"], t["table_path"], m, s, w, budget,
                                          t["min_iter"], "t.db")
                    key = f"{t['name']}-W{w}-{m}-{s}".replace("+", "_").replace(
                        "(", "_").replace(")", "")
                    jobs.append((f"{t['name']} W={w} {m} seed {s}", key, sp, args))

    lock = threading.Lock()
    state = {"shown": 0, "rows": 0, "differ": 0, "failed": 0, "left_out": set(), "done": 0}
    n_all = len(jobs) + len(gen_jobs)

    def report(label, folders):
        total, counts, diffs, left_out = compare(os.path.join(folders["base"], "t.db"),
                                                 os.path.join(folders["new"], "t.db"))
        with lock:
            state["done"] += 1
            state["rows"] += total
            state["left_out"].update(left_out)
            what = ", ".join(f"{counts[k]} {k}" for k in ("trials", "results", "decisions"))
            if diffs:
                state["differ"] += 1
                print(f"[{state['done']}/{n_all}] {label}: DIFFERENT ({what} in base)",
                      flush=True)
                if state["shown"] < a.show:
                    state["shown"] += 1
                    print(f"  base: {folders['base']}\n  new:  {folders['new']}")
                    print("\n".join(diffs), flush=True)
            else:
                print(f"[{state['done']}/{n_all}] {label}: identical ({what})", flush=True)
        return bool(diffs)

    def one(job):
        label, key, sp, args = job
        folders = {}
        try:
            for side in ("base", "new"):
                d = os.path.join(work, side, key)
                if os.path.exists(d):
                    shutil.rmtree(d)
                os.makedirs(d)
                with open(os.path.join(d, "space.json"), "w") as f:
                    json.dump(sp, f)
                run([tunes[side]] + args, d)
                folders[side] = d
        except RuntimeError as e:
            with lock:
                state["done"] += 1
                state["failed"] += 1
                print(f"[{state['done']}/{n_all}] {label}: FAILED\n{e}", flush=True)
            return True
        differ = report(label, folders)
        if not differ and not a.keep:
            for d in folders.values():
                shutil.rmtree(d, ignore_errors=True)
        return differ

    for label, folders in gen_jobs:
        report(label, folders)
    with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        list(ex.map(one, jobs))

    took = time.time() - t_start
    if state["left_out"]:
        print("columns left out (one schema lacks them): " + ", ".join(sorted(state["left_out"])))
    if state["failed"]:
        print(f"{n_all} runs: {state['failed']} failed, {state['differ']} different "
              f"({state['rows']} rows compared, {took:.0f} s); runs in {work}")
        return 2
    if state["differ"]:
        print(f"{n_all} runs, {state['differ']} DIFFERENT ({state['rows']} rows compared, "
              f"{took:.0f} s); runs in {work}")
        return 1
    print(f"{n_all} runs, all identical ({state['rows']} rows compared, {took:.0f} s)")
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
