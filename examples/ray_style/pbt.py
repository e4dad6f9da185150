"""Ray Tune's PBT function example under tune: each trial saves its state into a
tempfile.TemporaryDirectory and reports it as Checkpoint.from_directory(d) (tune keeps a
copy in the trial's folder, so the temporary one may go), restores from
train.get_checkpoint(), and PopulationBasedTraining copies good trials' checkpoints into
poor ones with a perturbed learning rate. Only the imports differ from a Ray script
(`from ray import train, tune`, `from ray.train import Checkpoint`,
`from ray.tune.schedulers import PopulationBasedTraining`)."""

import argparse
import json
import math
import os
import tempfile
import time

from tune import train
import tune
from tune.schedulers import PopulationBasedTraining
from tune.train import Checkpoint


def pbt_function(config):
    """A toy whose accuracy climbs fastest when lr is near the peak (0.01 here): a poor lr
    falls behind, and PBT replaces it with a perturbed copy of a better one."""
    lr = config["lr"]
    accuracy = 0.0
    step = 1
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as checkpoint_dir:
            with open(os.path.join(checkpoint_dir, "checkpoint.json")) as f:
                state = json.load(f)
        accuracy = state["acc"]
        step = state["step"] + 1

    while step <= 40:
        # the closer lr is to 0.01 (on a log scale), the larger each step's gain: a decade
        # off gains 50 times less
        gain = 0.2 * math.exp(-4 * abs(math.log10(lr / 0.01)))
        accuracy = min(1.0, accuracy + gain * (1.0 - accuracy))
        time.sleep(0.02)  # a little work, so that the trials overlap
        metrics = {"mean_accuracy": accuracy, "cur_lr": lr}
        if step % config["checkpoint_interval"] == 0:
            with tempfile.TemporaryDirectory() as tempdir:
                with open(os.path.join(tempdir, "checkpoint.json"), "w") as f:
                    json.dump({"acc": accuracy, "step": step}, f)
                train.report(metrics, checkpoint=Checkpoint.from_directory(tempdir))
        else:
            train.report(metrics)
        step += 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="finish quickly")
    args, _ = parser.parse_known_args()

    perturbation_interval = 5
    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=perturbation_interval,
        hyperparam_mutations={"lr": tune.loguniform(1e-4, 1e-1)},
    )
    tuner = tune.Tuner(
        pbt_function,
        run_config=train.RunConfig(
            name="pbt_example",
            verbose=0,
            stop={"training_iteration": 20 if args.smoke_test else 40},
            failure_config=train.FailureConfig(fail_fast=True),
        ),
        tune_config=tune.TuneConfig(
            scheduler=pbt, metric="mean_accuracy", mode="max", num_samples=6, seed=2,
        ),
        param_space={
            "lr": tune.loguniform(1e-4, 1e-1),
            "checkpoint_interval": perturbation_interval,
        },
    )
    results = tuner.fit()
    best = results.get_best_result()
    print("Best hyperparameters found were:", best.config)
    print("Best trial's final accuracy:", best.metrics["mean_accuracy"])
    print("Its latest checkpoint:", best.checkpoint)
