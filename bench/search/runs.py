"""bench/search/runs.py: what the search benchmark runs under tune, in one place: the tasks,
tune's methods, and the space.json and `tune simulate` arguments of each run. Standard
library only, so that bench.py (which needs numpy for its regret curves) and
same_decisions.py (which must run without it) build the very same runs. Not for: running
them or reading their results (bench.py)."""
import json
import os

START_DELAY = STOP_DELAY = 0.05  # tune simulate's defaults (docs/simulate.md)

# (name, synthetic spec, rows) or (name, table path): the tasks, in the order reported.
TASKS = [
    # The MLP task is the table's first part (its 179 configurations recorded from
    # bench/tables/mlp.space.json, trial names without the b_ prefix): the benchmark's seeds
    # were run on it while part b was still being recorded, and every seed must see the
    # same table.
    {"name": "mlp", "space": "tasks/mlp.json", "table": "bench/tables/mlp.csv.gz",
     "exclude_prefix": "b_"},
    {"name": "cnn", "space": "tasks/cnn.json", "table": "bench/tables/cnn.csv.gz"},
    {"name": "synth4", "space": "tasks/synth4.json", "rows": 1000,
     "synthetic": "seed=4,noise=0.02,cross=0,diverge=0.05,iters=27"},
    {"name": "synth8", "space": "tasks/synth8.json", "rows": 2000,
     "synthetic": "seed=8,noise=0.05,cross=0.25,diverge=0.1,iters=27,time_spread=1"},
]

TUNE_METHODS = {
    "random+ASHA": ({"type": "random"}, "asha"),
    "TPE(optuna)+ASHA": ({"type": "tpe", "preset": "optuna"}, "asha"),
    "TPE(bohb)+ASHA": ({"type": "tpe", "preset": "bohb"}, "asha"),
    "TPE(optuna)+FIFO": ({"type": "tpe", "preset": "optuna"}, "fifo"),
}


def synthetic_space(task, space_path, rows, db):
    """The run that draws a synthetic task's fixed set of curves: the synthetic family at
    `rows` configurations, seed 2026, FIFO, 64 at once. (space.json, tune's arguments)."""
    with open(space_path) as f:
        sp = json.load(f)
    sp.update({"name": f"gen-{task['name']}", "num_samples": rows, "seed": 2026,
               "scheduler": {"type": "fifo"}, "max_concurrent": 64})
    return sp, ["simulate", "space.json", "--synthetic", task["synthetic"], "--workers", "64",
                "--db", db, "--quiet"]


def tune_space(space_path, table_path, method, seed, workers, budget, min_iter, db):
    """One benchmark run of a tune method on a table: (space.json, tune's arguments)."""
    search, sched = TUNE_METHODS[method]
    with open(space_path) as f:
        sp = json.load(f)
    sp["name"] = "b"
    sp["seed"] = seed
    sp["search"] = search
    if sched == "fifo":
        sp["scheduler"] = {"type": "fifo"}
    sp["max_concurrent"] = workers
    sp["time_budget_s"] = budget
    # enough trials that the budget, not num_samples, ends the run
    sp["num_samples"] = int(budget * workers / (min_iter + START_DELAY)) + workers + 1
    return sp, ["simulate", "space.json", "--table", os.path.abspath(table_path), "--workers",
                str(workers), "--db", db, "--quiet"]
