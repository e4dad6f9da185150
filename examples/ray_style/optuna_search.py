"""Ray Tune's Optuna example under tune: OptunaSearch (its default sampler, TPE, which
tune runs in C) behind a ConcurrencyLimiter, ASHA stopping poor trials, a conditional
choice of activation. Only the imports differ from a Ray script
(`from ray.tune.search.optuna import OptunaSearch`, ...)."""

import argparse

from tune import train
import tune
from tune.schedulers import AsyncHyperBandScheduler
from tune.search import ConcurrencyLimiter
from tune.search.optuna import OptunaSearch


def evaluate(step, width, height, activation):
    # relu learns a little faster than tanh; the best width and height are 50 and 20
    slope = 1.0 if activation == "relu" else 0.8
    return ((width - 50) / 10) ** 2 + ((height - 20) / 10) ** 2 + 10.0 / (1 + slope * step)


def objective(config):
    for step in range(config["steps"]):
        score = evaluate(step, config["width"], config["height"], config["activation"])
        train.report({"iterations": step, "mean_loss": score})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="finish quickly")
    args, _ = parser.parse_known_args()

    searcher = OptunaSearch(seed=3)
    algo = ConcurrencyLimiter(searcher, max_concurrent=2)
    scheduler = AsyncHyperBandScheduler(grace_period=1, max_t=9, reduction_factor=3)
    search_space = {
        "steps": 9,
        "width": tune.uniform(0, 100),
        "height": tune.uniform(-50, 50),
        "activation": tune.choice(["relu", "tanh"]),
    }
    tuner = tune.Tuner(
        objective,
        tune_config=tune.TuneConfig(
            metric="mean_loss", mode="min", search_alg=algo, scheduler=scheduler,
            num_samples=10 if args.smoke_test else 30,
        ),
        run_config=train.RunConfig(name="optuna_example"),
        param_space=search_space,
    )
    results = tuner.fit()
    print("Best hyperparameters found were:", results.get_best_result().config)
