"""Ray Tune's way to hand a large object to every trial, under tune:
tune.with_parameters(train_fn, data=data). The data is made once in the driver; tune
pickles it once (tune_params/ next to the database) and each trial's process loads it.
A least-squares fit by gradient descent on numpy arrays, the learning rate searched,
ASHA stopping the slow ones. Only the imports differ from a Ray script."""

import argparse

import numpy as np

from tune import train
import tune
from tune.schedulers import ASHAScheduler


def train_fn(config, data=None):
    x, y = data["x"], data["y"]
    w = np.zeros(x.shape[1])
    for epoch in range(20):
        grad = 2 * x.T @ (x @ w - y) / len(y)
        w -= config["lr"] * grad
        train.report({"loss": float(np.mean((x @ w - y) ** 2))})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="finish quickly")
    args, _ = parser.parse_known_args()

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 5))
    y = x @ np.array([1.0, -2.0, 0.5, 3.0, 0.0]) + 0.1 * rng.normal(size=2000)

    tuner = tune.Tuner(
        tune.with_parameters(train_fn, data={"x": x, "y": y}),
        param_space={"lr": tune.loguniform(1e-4, 0.5)},
        tune_config=tune.TuneConfig(
            metric="loss", mode="min", num_samples=6 if args.smoke_test else 12, seed=4,
            scheduler=ASHAScheduler(max_t=20, grace_period=2, reduction_factor=3),
        ),
        run_config=train.RunConfig(name="with_parameters_example"),
    )
    results = tuner.fit()
    best = results.get_best_result()
    print("Best hyperparameters found were:", best.config)
    print("Best loss:", best.metrics["loss"])
