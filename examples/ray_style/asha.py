"""Ray Tune's ASHA example under tune: a function trainable that reports a loss curve
each step with train.report, AsyncHyperBandScheduler stopping the poor trials early,
Tuner + TuneConfig + RunConfig, and the best configuration. Only the imports differ from
a Ray script (`from ray import train, tune`, `from ray.tune.schedulers import ...`)."""

import argparse

from tune import train
import tune
from tune.schedulers import AsyncHyperBandScheduler


def evaluation_fn(step, width, height):
    # the loss falls with the steps, faster for a wider model; a taller one pays a constant
    return (0.1 + width * step / 100) ** (-1) + height * 0.1


def easy_objective(config):
    width, height = config["width"], config["height"]
    for step in range(config["steps"]):
        intermediate_score = evaluation_fn(step, width, height)
        train.report({"iterations": step, "mean_loss": intermediate_score})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="finish quickly")
    args, _ = parser.parse_known_args()

    scheduler = AsyncHyperBandScheduler(grace_period=2, max_t=30, reduction_factor=3)
    tuner = tune.Tuner(
        tune.with_resources(easy_objective, {"cpu": 1, "gpu": 0}),
        run_config=train.RunConfig(
            name="asha_example",
            stop={"training_iteration": 5 if args.smoke_test else 30},
        ),
        tune_config=tune.TuneConfig(
            metric="mean_loss", mode="min", scheduler=scheduler, num_samples=12, seed=1,
        ),
        param_space={
            "steps": 30,
            "width": tune.uniform(10, 100),
            "height": tune.uniform(0, 100),
        },
    )
    results = tuner.fit()
    print("Best hyperparameters found were:", results.get_best_result().config)
