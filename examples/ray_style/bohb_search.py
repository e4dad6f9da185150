"""Ray Tune's BOHB example under tune: TuneBOHB with HyperBandForBOHB, a ConcurrencyLimiter,
and the best configuration. Only the imports differ from a Ray script
(`from ray.tune.search.bohb import TuneBOHB`, `from ray.tune.schedulers import
HyperBandForBOHB`)."""

import argparse

from tune import train
import tune
from tune.schedulers import HyperBandForBOHB
from tune.search import ConcurrencyLimiter
from tune.search.bohb import TuneBOHB


def objective(config):
    for step in range(config["steps"]):
        loss = ((config["width"] - 50) / 10) ** 2 + ((config["height"] - 20) / 10) ** 2 \
            + 10.0 / (1 + step)
        train.report({"iterations": step, "mean_loss": loss})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="finish quickly")
    args, _ = parser.parse_known_args()

    bohb_hyperband = HyperBandForBOHB(time_attr="training_iteration", max_t=9,
                                      reduction_factor=3, stop_last_trials=False)
    bohb_search = ConcurrencyLimiter(TuneBOHB(seed=11), max_concurrent=4)
    tuner = tune.Tuner(
        objective,
        run_config=train.RunConfig(name="bohb_example", stop={"training_iteration": 9}),
        tune_config=tune.TuneConfig(
            metric="mean_loss", mode="min", scheduler=bohb_hyperband, search_alg=bohb_search,
            num_samples=9 if args.smoke_test else 18,
        ),
        param_space={"steps": 9, "width": tune.uniform(0, 100),
                     "height": tune.uniform(-50, 50)},
    )
    results = tuner.fit()
    print("Best hyperparameters found were:", results.get_best_result().config)
