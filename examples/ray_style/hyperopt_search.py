"""Ray Tune's HyperOpt example under tune: HyperOptSearch (TPE, which tune runs in C)
with metric, mode and points_to_evaluate of its own, ASHA, and the classic tune.run.
Only the imports differ from a Ray script
(`from ray.tune.search.hyperopt import HyperOptSearch`, ...)."""

import argparse

from tune import train
import tune
from tune.schedulers import AsyncHyperBandScheduler
from tune.search.hyperopt import HyperOptSearch


def evaluate(step, width, height):
    return ((width - 50) / 10) ** 2 + ((height - 20) / 10) ** 2 + 10.0 / (1 + step)


def easy_objective(config):
    for step in range(config["steps"]):
        train.report({"iterations": step,
                      "mean_loss": evaluate(step, config["width"], config["height"])})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="finish quickly")
    args, _ = parser.parse_known_args()

    # two guesses tried first, as Ray's example does; the searcher says metric and mode
    current_best_params = [{"width": 10, "height": 0}, {"width": 50, "height": 25}]
    algo = HyperOptSearch(metric="mean_loss", mode="min",
                          points_to_evaluate=current_best_params, random_state_seed=5)
    analysis = tune.run(
        easy_objective,
        name="hyperopt_example",
        search_alg=algo,
        scheduler=AsyncHyperBandScheduler(grace_period=1, max_t=9, reduction_factor=3),
        num_samples=10 if args.smoke_test else 24,
        max_concurrent_trials=2,
        config={"steps": 9, "width": tune.uniform(0, 100), "height": tune.uniform(-50, 50)},
    )
    print("Best hyperparameters found were:", analysis.best_config)
