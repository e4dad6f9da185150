#!/usr/bin/python3
"""synth_family.py: the Python side of bench/sim/run.sh. The synthetic family of
docs/simulate.md ("The synthetic family") reimplemented from its formula, checked against
a table that `tune export NAME --table` wrote from a simulated run, and run under Optuna
3.1 in memory (ask/tell, RandomSampler, SuccessiveHalvingPruner) to time results per
second. Not for: anything but that benchmark; it needs Debian's /usr/bin/python3 and
python3-optuna (for `optuna` only).

  synth_family.py check TABLE.csv --seed S      exit 1 unless every loss, time_this_iter_s,
                                                time_total_s and cost matches
  synth_family.py optuna --trials N --seed S    one JSON line of counts and times

The space is bench/sim/run.sh's: lr loguniform [1e-5, 1], momentum uniform [0, 0.99],
width choice [64, 128, 256, 512], in that order; ASHA max_t 81, grace 1, rf 3.
"""
import argparse
import csv
import json
import math
import struct
import sys
import time

M64 = (1 << 64) - 1
WIDTHS = [64, 128, 256, 512]


def mix64(z):
    """splitmix64's output function, on 64-bit unsigned integers."""
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def unit_of(z):
    return (z >> 11) * 2.0**-53


def bits_of(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


class Family:
    """The family for one spec: seed, noise 0.02, cross 0.5, diverge 0.05 (the defaults)."""

    def __init__(self, seed, noise=0.02, cross=0.5, diverge=0.05, time_=1.0, spread=0.5):
        self.seed, self.noise, self.cross, self.diverge = seed, noise, cross, diverge
        self.time, self.spread = time_, spread
        self.c, self.w = [], []
        z = seed
        for _ in range(32):
            self.c.append(0.2 + 0.6 * unit_of(mix64(z)))
            self.w.append(0.5 + 1.5 * unit_of(mix64(z + 1)))
            z += 2

    def units(self, lr, momentum, width):
        """The configuration in [0, 1] per parameter (log scale for lr)."""
        lo, hi = math.log(1e-5), math.log(1.0)
        u_lr = min(1.0, max(0.0, (math.log(lr) - lo) / (hi - lo)))
        u_m = min(1.0, max(0.0, (momentum - 0.0) / (0.99 - 0.0)))
        u_w = WIDTHS.index(width) / (len(WIDTHS) - 1)
        return [u_lr, u_m, u_w]

    def curve(self, u):
        key = self.seed
        for x in u:
            key = mix64(key ^ bits_of(x))
        q = sum(self.w[i] * (u[i] - self.c[i]) ** 2 for i in range(len(u)))
        q /= sum(self.w[i] for i in range(len(u)))
        diverge_from = None
        if u[0] > 1 - self.diverge:
            diverge_from = 1 + mix64(key ^ 0xD1E5) % 3
        final = 0.05 + 2 * q
        gap = 2 * math.exp(-self.cross * 4 * q)
        alpha = 0.5 * (1 + self.cross * 4 * q)
        secs = self.time * (1 + self.spread * (u[-1] - 0.5))
        return key, diverge_from, final, gap, alpha, secs

    def cost(self, u):
        """The second objective: sum w_i u_i / sum w_i, the loss's own weights."""
        wsum = sum(self.w[i] for i in range(len(u)))
        return sum(self.w[i] * u[i] for i in range(len(u))) / wsum if wsum > 0 else 0.0

    def time_total(self, cv, t):
        """The seconds so far: every iteration takes the curve's seconds."""
        return cv[5] * t

    def loss(self, cv, t):
        key, diverge_from, final, gap, alpha, _ = cv
        if diverge_from is not None and t >= diverge_from:
            return math.nan
        loss = final + gap * math.pow(t, -alpha)
        if self.noise > 0:
            z = mix64(key ^ mix64(t))
            u1 = 1.0 - unit_of(mix64(z))
            u2 = unit_of(mix64((z + 1) & M64))
            loss += self.noise * math.sqrt(-2 * math.log(u1)) * math.cos(6.283185307179586 * u2)
        return loss


def close(want, got):
    """tune prints each number in its shortest exact form: equal up to rounding, or both NaN."""
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return abs(want - got) <= 1e-12 * max(1.0, abs(want))


def cell(row, key):
    v = row.get(key)
    return float(v) if v not in (None, "", "null") else math.nan


def check(a):
    fam = Family(a.seed)
    n = bad = 0
    # Every key a result of the family reports (docs/simulate.md, "The synthetic family" and
    # "Several objectives"), each from its formula.
    keys = ["loss", "time_this_iter_s", "time_total_s", "cost"]
    by_key = dict.fromkeys(keys, 0)
    with open(a.table, newline="") as f:
        reader = csv.DictReader(f)
        missing = [k for k in keys if k not in (reader.fieldnames or [])]
        if missing:
            print("the table has no column %s (tune export NAME --table of a synthetic run "
                  "writes each)" % ", ".join(missing), file=sys.stderr)
            print(json.dumps({"rows": 0, "mismatches": 0, "missing": missing}))
            return 1
        for row in reader:
            u = fam.units(
                float(row["config/lr"]), float(row["config/momentum"]), int(row["config/width"])
            )
            cv = fam.curve(u)
            it = int(row["training_iteration"])
            want = {
                "loss": fam.loss(cv, it),
                "time_this_iter_s": cv[5],
                "time_total_s": fam.time_total(cv, it),
                "cost": fam.cost(u),
            }
            n += 1
            wrong = [k for k in keys if not close(want[k], cell(row, k))]
            for k in wrong:
                by_key[k] += 1
            if wrong:
                bad += 1
                if bad <= 3:
                    print("mismatch in %s: %s: tune %r, formula %r" % (
                        ", ".join(wrong), dict(row), [cell(row, k) for k in wrong],
                        [want[k] for k in wrong]), file=sys.stderr)
    print(json.dumps({"rows": n, "mismatches": bad, "by_key": by_key}))
    return 0 if n > 0 and bad == 0 else 1


def run_optuna(a):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    fam = Family(a.seed)
    max_t = 81
    # Timed from creating the study to the last tell: Python's start and `import optuna`
    # are left out, which favours Optuna.
    t0 = time.monotonic()
    study = optuna.create_study(
        direction="minimize",
        sampler=optuna.samplers.RandomSampler(seed=a.seed),
        pruner=optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=3, min_early_stopping_rate=0
        ),
    )
    results = pruned = 0
    for _ in range(a.trials):
        trial = study.ask()
        lr = trial.suggest_float("lr", 1e-5, 1.0, log=True)
        momentum = trial.suggest_float("momentum", 0.0, 0.99)
        width = trial.suggest_categorical("width", WIDTHS)
        cv = fam.curve(fam.units(lr, momentum, width))
        value, state = None, optuna.trial.TrialState.COMPLETE
        for t in range(1, max_t + 1):
            loss = fam.loss(cv, t)
            results += 1
            if math.isnan(loss):  # diverged: ASHA stops it, Optuna is told it pruned
                state = optuna.trial.TrialState.PRUNED
                break
            trial.report(loss, t)
            value = loss
            if trial.should_prune():
                state = optuna.trial.TrialState.PRUNED
                break
        if state == optuna.trial.TrialState.PRUNED:
            pruned += 1
            study.tell(trial, state=state)
        else:
            study.tell(trial, value)
    wall = time.monotonic() - t0
    print(
        json.dumps(
            {
                "optuna": optuna.__version__,
                "trials": a.trials,
                "pruned": pruned,
                "results": results,
                "wall_s": wall,
                "results_per_s": results / wall if wall > 0 else 0,
                "trials_per_s": a.trials / wall if wall > 0 else 0,
            }
        )
    )
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("table")
    c.add_argument("--seed", type=int, required=True)
    o = sub.add_parser("optuna")
    o.add_argument("--trials", type=int, required=True)
    o.add_argument("--seed", type=int, required=True)
    a = ap.parse_args()
    return check(a) if a.cmd == "check" else run_optuna(a)


if __name__ == "__main__":
    sys.exit(main())
