"""bench/search/runs.py: what the search benchmark runs under tune, in one place: the tasks,
tune's methods, and the space.json and `tune simulate` arguments of each run. Standard
library only, so that bench.py (which needs numpy for its regret curves) and
same_decisions.py (which must run without it) build the very same runs. Not for: running
them or reading their results (bench.py)."""
import json
import os

START_DELAY = STOP_DELAY = 0.05  # tune simulate's defaults (docs/simulate.md)

# TaskSet's tasks (bench/tables/taskset/README.md): (bench name, table name); their space
# is the table's own space.json (random + ASHA, max_t 50, grace 1, rf 3).
TASKSET_DIR = "bench/tables/taskset"
TASKSET_TUNED = [
    ("ts_p128_lstm128_avg", "patch128_LSTM128_avg_bs64"),
    ("ts_p128_lstm128_embed128", "patch128_LSTM128_embed128_bs64"),
    ("ts_p32_gru64_avg", "patch32_GRU64_avg_bs128"),
    ("ts_p32_irnn64_relu_last", "patch32_IRNN64_relu_last_bs128"),
    ("ts_p32_lstm128", "patch32_LSTM128_bs128"),
    ("ts_p32_vrnn64_tanh_avg", "patch32_VRNN64_tanh_avg_bs128"),
]
# Kept aside to check a searcher chosen on the six above: not to be tuned on, so outside
# the default task list; `convert.py --holdout` makes their tables (not committed).
TASKSET_HOLDOUT = [
    ("ts_p128_lstm128", "patch128_LSTM128_bs64"),
    ("ts_p32_gru128", "patch32_GRU128_bs128"),
    ("ts_p32_irnn64_relu_avg", "patch32_IRNN64_relu_avg_bs128"),
    ("ts_p32_lstm128_e128", "patch32_LSTM128_E128_bs128"),
    ("ts_p32_vrnn128_tanh", "patch32_VRNN128_tanh_bs128"),
    ("ts_p32_vrnn64_relu_avg", "patch32_VRNN64_relu_avg_bs128"),
]


def _taskset(name, table, folder, holdout=False):
    path = f"{folder}/FixedTextRNNClassification_imdb_{table}"
    t = {"name": name, "space": f"../../{path}.space.json", "table": f"{path}.csv.gz",
         "protocols": ["pool"]}
    if holdout:
        t["holdout"] = True
    return t


# The synthetic tasks' specs (docs/simulate.md, "The synthetic family"): sampled into a
# table (synth4, synth8) or unsampled (synth4-family, synth8-family).
SYNTH4 = "seed=4,noise=0.02,cross=0,diverge=0.05,iters=27"
SYNTH8 = "seed=8,noise=0.05,cross=0.25,diverge=0.1,iters=27,time_spread=1"
# The family tasks' reference sample: configurations drawn from the space by
# random.Random(FAMILY_SAMPLE_SEED); its best and median value at max_t normalise regret.
FAMILY_SAMPLE = 200_000
FAMILY_SAMPLE_SEED = 2026

# (name, synthetic spec, rows), (name, table path) or (name, family spec): the tasks, in
# the order reported.
# "space" is relative to bench/search/. "protocols": how a table answers a configuration
# unless bench.py's --protocol says otherwise: "nearest" (docs/simulate.md's nearest-row
# rule) or "pool" (tune simulate --pool: each row trained at most once). TaskSet's tasks
# are run as the literature runs them (DyHPO, DPL: a finite pool); the project's tables
# both ways (issue 29).
TASKS = [
    # The MLP task is the table's first part (its 179 configurations recorded from
    # bench/tables/mlp.space.json, trial names without the b_ prefix): the benchmark's seeds
    # were run on it while part b was still being recorded, and every seed must see the
    # same table.
    {"name": "mlp", "space": "tasks/mlp.json", "table": "bench/tables/mlp.csv.gz",
     "exclude_prefix": "b_", "protocols": ["nearest", "pool"]},
    {"name": "cnn", "space": "tasks/cnn.json", "table": "bench/tables/cnn.csv.gz",
     "protocols": ["nearest", "pool"]},
    {"name": "synth4", "space": "tasks/synth4.json", "rows": 1000, "synthetic": SYNTH4},
    {"name": "synth8", "space": "tasks/synth8.json", "rows": 2000, "synthetic": SYNTH8},
] + [_taskset(n, t, TASKSET_DIR) for n, t in TASKSET_TUNED] + [
    # The same family unsampled (issue 29): no table; tune's runs are `tune simulate
    # --synthetic SPEC`, Optuna's replay computes each configuration's curve with
    # bench/sim/synth_family.py (checked against tune's by tests/python/test_searchbench.py).
    # Regret against the best and median at max_t of FAMILY_SAMPLE configurations.
    {"name": "synth4-family", "space": "tasks/synth4.json", "family": SYNTH4},
    {"name": "synth8-family", "space": "tasks/synth8.json", "family": SYNTH8},
]
HOLDOUT_TASKS = [_taskset(n, t, TASKSET_DIR + "/holdout", True) for n, t in TASKSET_HOLDOUT]
PROTOCOLS = ("nearest", "pool")

TUNE_METHODS = {
    "random+ASHA": ({"type": "random"}, "asha"),
    "TPE(optuna)+ASHA": ({"type": "tpe", "preset": "optuna"}, "asha"),
    "TPE(bohb)+ASHA": ({"type": "tpe", "preset": "bohb"}, "asha"),
    "TPE(optuna)+FIFO": ({"type": "tpe", "preset": "optuna"}, "fifo"),
    # issue 29, experimental: under the pool protocol, propose and take the nearest unused
    # row (Optuna's replay) instead of scoring every unused row (docs/search.md)
    "TPE(optuna;propose)+ASHA": ({"type": "tpe", "preset": "optuna", "pool": "propose"},
                                 "asha"),
    "TPE(optuna;propose+steps)+ASHA": (
        {"type": "tpe", "preset": "optuna", "pool": "propose+steps"}, "asha"),
    "TPE(optuna;propose+startup10)+ASHA": (
        {"type": "tpe", "preset": "optuna", "pool": "propose+startup10"}, "asha"),
    "TPE(optuna;propose+steps+startup10)+ASHA": (
        {"type": "tpe", "preset": "optuna", "pool": "propose+steps+startup10"}, "asha"),
    "TPE(optuna;score+steps+startup10)+ASHA": (
        {"type": "tpe", "preset": "optuna", "pool": "score+steps+startup10"}, "asha"),
    # ASHA's promotion variant (docs/pbt.md): a trial pauses at each rung until it is in
    # the top 1/rf there, so the first trainings to reach max_t are chosen, not the first
    # started
    "random+ASHA(promotion)": ({"type": "random"}, "asha-promotion"),
    "TPE(optuna)+ASHA(promotion)": ({"type": "tpe", "preset": "optuna"}, "asha-promotion"),
    "TPE(bohb)+ASHA(promotion)": ({"type": "tpe", "preset": "bohb"}, "asha-promotion"),
    "TPE(optuna;propose+startup10)+ASHA(promotion)": (
        {"type": "tpe", "preset": "optuna", "pool": "propose+startup10"}, "asha-promotion"),
    # "eager_promotion": the promotion variant, but a rung holding fewer than rf results
    # promotes its best, so the first trials go on at once (docs/pbt.md)
    "random+ASHA(eager)": ({"type": "random"}, "asha-eager"),
    "TPE(optuna)+ASHA(eager)": ({"type": "tpe", "preset": "optuna"}, "asha-eager"),
    "TPE(bohb)+ASHA(eager)": ({"type": "tpe", "preset": "bohb"}, "asha-eager"),
    "TPE(optuna;propose+startup10)+ASHA(eager)": (
        {"type": "tpe", "preset": "optuna", "pool": "propose+startup10"}, "asha-eager"),
    "TPE(optuna;propose)+ASHA(eager)": (
        {"type": "tpe", "preset": "optuna", "pool": "propose"}, "asha-eager"),
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


def tune_space(space_path, table_path, method, seed, workers, budget, min_iter, db,
               pool=False, synthetic=None):
    """One benchmark run of a tune method on a table: (space.json, tune's arguments).
    pool: the pool protocol (`tune simulate --pool`), else the nearest-row rule.
    synthetic: a family spec instead of a table (`tune simulate --synthetic SPEC`; no
    table_path, no pool)."""
    search, sched = TUNE_METHODS[method]
    with open(space_path) as f:
        sp = json.load(f)
    sp["name"] = "b"
    sp["seed"] = seed
    sp["search"] = search
    if sched == "fifo":
        sp["scheduler"] = {"type": "fifo"}
    elif sched in ("asha-promotion", "asha-eager"):
        sp["scheduler"] = dict(sp["scheduler"], variant="promotion" if sched == "asha-promotion"
                               else "eager_promotion")
    sp["max_concurrent"] = workers
    sp["time_budget_s"] = budget
    # enough trials that the budget, not num_samples, ends the run
    sp["num_samples"] = int(budget * workers / (min_iter + START_DELAY)) + workers + 1
    # Under the pool protocol num_samples may exceed the table's rows: tune simulate then
    # starts no trial once every row is taken, and the budget still ends the run.
    if synthetic is not None:
        return sp, ["simulate", "space.json", "--synthetic", synthetic, "--workers",
                    str(workers), "--db", db, "--quiet"]
    return sp, ["simulate", "space.json", "--table", os.path.abspath(table_path), "--workers",
                str(workers), "--db", db, "--quiet"] + (["--pool"] if pool else [])

