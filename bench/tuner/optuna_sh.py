#!/usr/bin/python3
"""optuna_sh.py: the Optuna side of bench/tuner/run.sh. It runs the synthetic learning-curve
objective of tests/progs/synth_trial.c under Optuna's SuccessiveHalvingPruner with SQLite
storage and prints one JSON line of counts and times. Not for: anything but that benchmark;
it is run with Debian's /usr/bin/python3 and python3-optuna, and needs nothing else.

The objective, the same as tune's trials: lr ~ loguniform[1e-5, 1],
loss(t) = 0.1 + 0.3 * |log10(lr / 0.01)| + 1 / sqrt(t), reported for t = 1..max_t.
"""
import argparse
import json
import math
import sqlite3
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, required=True)
    ap.add_argument("--max-t", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--db", required=True, help="SQLite file to create (must not exist)")
    a = ap.parse_args()

    t_import = time.monotonic()
    import optuna

    t_imported = time.monotonic()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    max_t = a.max_t

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-5, 1.0, log=True)
        floor = 0.1 + 0.3 * abs(math.log10(lr / 0.01))
        loss = float("nan")
        for t in range(1, max_t + 1):
            loss = floor + 1.0 / math.sqrt(t)
            trial.report(loss, t)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return loss

    # Timed from creating the study (and its SQLite file) to the end of optimize: Python's
    # start and `import optuna` are left out, which favours Optuna.
    t0 = time.monotonic()
    study = optuna.create_study(
        study_name="bench",
        storage="sqlite:///" + a.db,
        direction="minimize",
        sampler=optuna.samplers.RandomSampler(seed=a.seed),
        pruner=optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=3, min_early_stopping_rate=0
        ),
    )
    study.optimize(objective, n_trials=a.trials)
    wall = time.monotonic() - t0

    con = sqlite3.connect(a.db)
    states = dict(con.execute("SELECT state, count(*) FROM trials GROUP BY state").fetchall())
    results = con.execute("SELECT count(*) FROM trial_intermediate_values").fetchone()[0]
    con.close()
    best = study.best_trial
    out = {
        "optuna_version": optuna.__version__,
        "wall_s": wall,
        "import_s": t_imported - t_import,
        "complete": states.get("COMPLETE", 0),
        "pruned": states.get("PRUNED", 0),
        "failed": states.get("FAIL", 0),
        "results": results,
        "best_loss": best.value,
        "best_lr": best.params["lr"],
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
