"""Optuna 3.1's TPESampler time per suggestion with N finished trials and 10 parameters,
the peer number bench/search/tpe_bench prints beside its own. Not a test; run by
tpe_bench through /usr/bin/python3 (Debian's python3-optuna).
Usage: optuna_tpe_time.py N_TRIALS N_ASKS"""
import math
import random
import sys
import time

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

optuna.logging.set_verbosity(optuna.logging.WARNING)

# The same ten parameters as tpe_bench.c's space.
DISTS = {
    "u0": FloatDistribution(0, 1), "u1": FloatDistribution(0, 1), "u2": FloatDistribution(-1, 1),
    "l0": FloatDistribution(1e-5, 1, log=True), "l1": FloatDistribution(1e-3, 10, log=True),
    "q0": FloatDistribution(0, 1, step=0.05), "i0": IntDistribution(1, 64),
    "i1": IntDistribution(1, 1024, log=True), "c0": CategoricalDistribution(["a", "b", "c", "d"]),
    "u3": FloatDistribution(0, 10),
}


def objective(p):
    return ((p["u0"] - 0.3) ** 2 + (math.log10(p["l0"]) + 3) ** 2 + p["q0"]
            + (0.1 if p["c0"] == "b" else 0.5) + abs(p["i0"] - 20) / 64)


def main():
    n, asks = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(1)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=1))
    trials = []
    for _ in range(n):
        p = {}
        for name, d in DISTS.items():
            if isinstance(d, CategoricalDistribution):
                p[name] = rng.choice(d.choices)
            elif isinstance(d, IntDistribution):
                p[name] = rng.randint(d.low, d.high)
            elif d.log:
                p[name] = math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
            elif d.step:
                p[name] = d.low + d.step * rng.randint(0, round((d.high - d.low) / d.step))
            else:
                p[name] = rng.uniform(d.low, d.high)
        trials.append(optuna.trial.create_trial(params=p, distributions=DISTS, value=objective(p)))
    study.add_trials(trials)
    t0 = time.process_time()  # CPU time: the machine may be shared
    for _ in range(asks):
        t = study.ask(DISTS)
        study.tell(t, objective(t.params))
    print("%.6f" % ((time.process_time() - t0) / asks))


if __name__ == "__main__":
    main()
