#!/usr/bin/python3
"""synth_family.py: the synthetic family of docs/simulate.md ("The synthetic family")
reimplemented from its formula (sim/synth.c), for any space of uniform, loguniform, randint
and choice parameters, with search/unit.c's map of a value to [0, 1]; checked against a
table that `tune export NAME --table` wrote from a simulated run; and run under Optuna 3.1
in memory (ask/tell, RandomSampler, SuccessiveHalvingPruner) to time results per second.
bench/sim/run.sh runs it and bench/search imports it (its synth*-family tasks: Optuna
answered by the family itself): the one Python copy of the family. Not for: defining the
family (sim/ does; a drift is a bug here, and `check` finds it); `optuna` needs Debian's
/usr/bin/python3 and python3-optuna.

  synth_family.py check TABLE.csv --seed S      exit 1 unless every loss, time_this_iter_s,
                                                time_total_s and cost matches (run.sh's space)
  synth_family.py check TABLE.csv --space SPACE.json --spec SPEC
                                                the same for any space and spec
  synth_family.py optuna --trials N --seed S    one JSON line of counts and times

run.sh's space is lr loguniform [1e-5, 1], momentum uniform [0, 0.99], width choice [64, 128,
256, 512], in that order; ASHA max_t 81, grace 1, rf 3.
"""
import argparse
import csv
import json
import math
import random
import struct
import sys
import time

M64 = (1 << 64) - 1
# bench/sim/run.sh's space, in its order
RUN_SH_SPACE = {"lr": {"loguniform": [1e-5, 1]}, "momentum": {"uniform": [0, 0.99]},
                "width": {"choice": [64, 128, 256, 512]}}
KINDS = ("uniform", "loguniform", "randint", "choice")
MAX_DIMS = 32  # SIM_MAX_DIMS: the family reads at most this many parameters


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


def space_params(space):
    """The parameters of a space.json's "space" (a dict, in its order): [(name, kind, args)].
    A parameter that is not a one-key object of a known kind is refused, except constants
    (a plain value), which the family leaves out as tune does."""
    out = []
    for name, spec in space.items():
        if not isinstance(spec, dict):
            continue  # a constant: no dimension of the family
        if len(spec) != 1 or next(iter(spec)) not in KINDS:
            raise ValueError(f"parameter {name}: {spec!r} is not one of {', '.join(KINDS)} "
                             "(the kinds this port maps to [0, 1])")
        (kind, args), = spec.items()
        out.append((name, kind, args))
    return out


def unit(kind, args, v):
    """search/unit.c's space_param_unit: a value in [0, 1] on the parameter's own scale
    (log for loguniform), a choice by its index (0.5 when it has one value), randint's high
    excluded, clamped to [0, 1]."""
    if kind == "choice":
        k = args.index(v)
        return k / (len(args) - 1) if len(args) > 1 else 0.5
    lo, hi = float(args[0]), float(args[1])
    if kind == "randint":
        hi -= 1
    x = float(v)
    if kind == "loguniform":
        x, lo, hi = math.log(x), math.log(lo), math.log(hi)
    return min(1.0, max(0.0, (x - lo) / (hi - lo))) if hi > lo else 0.5


def sample(params, rng):
    """A configuration drawn from the space's own distribution (uniform, log-uniform,
    uniform integer in [low, high), uniform choice), with rng a random.Random."""
    cfg = {}
    for name, kind, args in params:
        if kind == "uniform":
            cfg[name] = rng.uniform(args[0], args[1])
        elif kind == "loguniform":
            cfg[name] = math.exp(rng.uniform(math.log(args[0]), math.log(args[1])))
        elif kind == "randint":
            cfg[name] = rng.randrange(int(args[0]), int(args[1]))
        else:
            cfg[name] = rng.choice(args)
    return cfg


# sim_synth_open's keys and defaults, and the values it allows
SPEC_DEFAULTS = {"seed": 0, "noise": 0.02, "cross": 0.5, "diverge": 0.05, "iters": None,
                 "time": 1.0, "time_spread": 0.5}


def parse_spec(spec):
    """A --synthetic SPEC ("seed=4,noise=0.02,...") as a dict over SPEC_DEFAULTS."""
    out = dict(SPEC_DEFAULTS)
    for tok in (spec or "").split(","):
        tok = tok.strip()
        if not tok:
            continue
        k, eq, v = tok.partition("=")
        if not eq or k not in out:
            raise ValueError(f"synthetic spec: {tok!r} is not one of {', '.join(out)}=NUMBER")
        out[k] = int(float(v)) if k in ("seed", "iters") else float(v)
    return out


class Family:
    """The family for one spec (sim_synth_open): seed, noise, cross, diverge, time and
    time_spread (the defaults: 0, 0.02, 0.5, 0.05, 1, 0.5). A configuration's curve comes
    from its u (one value in [0, 1] per parameter, units()); its noise from a hash of
    (seed, u, t), so one configuration always gives one curve."""

    def __init__(self, seed, noise=0.02, cross=0.5, diverge=0.05, time_=1.0, spread=0.5,
                 params=None, iters=None, mode="min", metric_key="loss"):
        self.seed, self.noise, self.cross, self.diverge = seed, noise, cross, diverge
        self.time, self.spread = time_, spread
        self.params = space_params(RUN_SH_SPACE) if params is None else params
        self.iters, self.mode, self.metric_key = iters, mode, metric_key
        self.c, self.w = [], []
        z = seed
        for _ in range(MAX_DIMS):
            self.c.append(0.2 + 0.6 * unit_of(mix64(z)))
            self.w.append(0.5 + 1.5 * unit_of(mix64(z + 1)))
            z += 2

    @classmethod
    def for_space(cls, space_json, spec):
        """The family `tune simulate SPACE --synthetic SPEC` answers with: the space's
        parameters in their order, its metric's mode, and iters (the spec's, else the
        scheduler's max_t, else 100 under FIFO)."""
        sp = parse_spec(spec)
        sch = space_json.get("scheduler", {})
        iters = sp["iters"]
        if iters is None:
            fifo = sch.get("type", "fifo") == "fifo" or not sch.get("max_t")
            iters = 100 if fifo else math.ceil(sch["max_t"])
        first = lambda x: x[0] if isinstance(x, list) else x  # noqa: E731
        return cls(sp["seed"], sp["noise"], sp["cross"], sp["diverge"], sp["time"],
                   sp["time_spread"], params=space_params(space_json["space"]), iters=iters,
                   mode=first(space_json.get("mode", "min")),
                   metric_key=first(space_json.get("metric", "loss")))

    def units(self, cfg):
        """The configuration (a dict by parameter name) in [0, 1] per parameter, in the
        space's order, at most MAX_DIMS of them."""
        return [unit(kind, args, cfg[name]) for name, kind, args in self.params][:MAX_DIMS]

    def curve(self, u):
        key = self.seed
        for x in u:
            key = mix64(key ^ bits_of(x))
        # in synth_loss's order of operations, so that the doubles are tune's to the bit
        q = wsum = 0.0
        for i in range(len(u)):
            d = u[i] - self.c[i]
            q += self.w[i] * d * d
            wsum += self.w[i]
        if wsum > 0:
            q /= wsum
        diverge_from = None
        if u and u[0] > 1 - self.diverge:
            diverge_from = 1 + mix64(key ^ 0xD1E5) % 3
        final = 0.05 + 2 * q
        gap = 2 * math.exp(-self.cross * 4 * q)
        alpha = 0.5 * (1 + self.cross * 4 * q)
        secs = self.time * (1 + self.spread * (u[-1] - 0.5)) if u else self.time
        return key, diverge_from, final, gap, alpha, secs

    def cost(self, u):
        """The second objective: sum w_i u_i / sum w_i, the loss's own weights."""
        num = wsum = 0.0
        for i in range(len(u)):
            num += self.w[i] * u[i]
            wsum += self.w[i]
        return num / wsum if wsum > 0 else 0.0

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

    def metric(self, cv, t):
        """The value reported under the space's metric: the loss, or 1 - loss for max."""
        v = self.loss(cv, t)
        return 1 - v if self.mode == "max" else v

    def config_curve(self, cfg):
        """A configuration's whole curve as tune simulate reports it: (seconds per
        iteration, [metric at iterations 1..iters]), NaN from where it diverges on."""
        cv = self.curve(self.units(cfg))
        return [cv[5]] * self.iters, [self.metric(cv, t) for t in range(1, self.iters + 1)]

    def reference(self, n, seed, t):
        """The family's values at iteration t over n configurations drawn from the space
        (random.Random(seed), sample()), minimised (1 - loss's sign turned for max), a
        diverged one (NaN) as +inf, sorted: the sample "best" and "median" are read from."""
        rng = random.Random(seed)
        sign = -1.0 if self.mode == "max" else 1.0
        vals = []
        for _ in range(n):
            v = self.metric(self.curve(self.units(sample(self.params, rng))), t)
            vals.append(sign * v if v == v else math.inf)
        vals.sort()
        return vals


def close(want, got):
    """Equal to the bit, or both NaN: tune prints each number in its shortest exact form
    (float() gives back its double), and the port repeats sim/synth.c's operations in their
    order with the same libm, so nothing is left to round."""
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return want == got


def cell(row, key):
    v = row.get(key)
    return float(v) if v not in (None, "", "null") else math.nan


def table_value(kind, args, text):
    """A configuration's value as `tune export --table` wrote it: a number in its shortest
    exact form (so float() gives the very double tune drew), or a choice's text."""
    if kind == "choice":
        for a in args:
            if str(a) == text or (not isinstance(a, (str, bool)) and _num(text) == a):
                return a
        raise ValueError(f"{text!r} is not one of the choice's values {args!r}")
    return float(text)


def _num(text):
    try:
        return float(text)
    except ValueError:
        return None


def check_table(fam, path):
    """Every row of a `tune export --table` of a `tune simulate --synthetic` run against the
    formula: ({"rows", "mismatches", "by_key"}, [a few mismatch texts]). Every key a result
    of the family reports (docs/simulate.md, "The synthetic family" and "Several
    objectives"), each from its formula; the metric under its space's name."""
    keys = [fam.metric_key, "time_this_iter_s", "time_total_s", "cost"]
    by_key = dict.fromkeys(keys, 0)
    n = bad = 0
    notes = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [k for k in keys if k not in (reader.fieldnames or [])]
        if missing:
            return {"rows": 0, "mismatches": 0, "missing": missing}, [
                "the table has no column %s (tune export NAME --table of a synthetic run "
                "writes each)" % ", ".join(missing)]
        for row in reader:
            cfg = {name: table_value(kind, args, row["config/" + name])
                   for name, kind, args in fam.params}
            u = fam.units(cfg)
            cv = fam.curve(u)
            it = int(row["training_iteration"])
            want = {
                fam.metric_key: fam.metric(cv, it),
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
                    notes.append("mismatch in %s: %s: tune %r, formula %r" % (
                        ", ".join(wrong), dict(row), [cell(row, k) for k in wrong],
                        [want[k] for k in wrong]))
    return {"rows": n, "mismatches": bad, "by_key": by_key}, notes


def check(a):
    if a.space:
        with open(a.space) as f:
            sp = json.load(f)
        fam = Family.for_space(sp, a.spec or "")
    else:
        fam = Family(a.seed)
    out, notes = check_table(fam, a.table)
    for x in notes:
        print(x, file=sys.stderr)
    print(json.dumps(out))
    return 0 if out["rows"] > 0 and out["mismatches"] == 0 else 1


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
        cfg = {"lr": trial.suggest_float("lr", 1e-5, 1.0, log=True),
               "momentum": trial.suggest_float("momentum", 0.0, 0.99),
               "width": trial.suggest_categorical("width", [64, 128, 256, 512])}
        cv = fam.curve(fam.units(cfg))
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
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--seed", type=int, help="the family's seed, on run.sh's space")
    g.add_argument("--space", help="the space.json the table was simulated on, with --spec")
    c.add_argument("--spec", help="the --synthetic SPEC the table was simulated with")
    o = sub.add_parser("optuna")
    o.add_argument("--trials", type=int, required=True)
    o.add_argument("--seed", type=int, required=True)
    a = ap.parse_args()
    return check(a) if a.cmd == "check" else run_optuna(a)


if __name__ == "__main__":
    sys.exit(main())
