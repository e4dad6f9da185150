"""Function trainables written as Ray 2 writes them (from tune import train, Checkpoint),
for test_ray_style.py: each trial imports this module by name. Each takes well under a
second."""

import json
import os

import tune
from tune import train


def saves_checkpoints(config):
    """Five results; a checkpoint folder (saved in TUNE_CHECKPOINT_DIR, which tune keeps)
    with each, holding the iteration; loss = x * |3 - i| + 1, so iteration 3 is the best."""
    for i in range(1, 6):
        d = os.path.join(os.environ["TUNE_CHECKPOINT_DIR"], f"ckpt_{i:06d}")
        os.makedirs(d)
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump({"i": i}, f)
        train.report({"loss": config["x"] * abs(3 - i) + 1, "training_iteration": i},
                     checkpoint=train.Checkpoint.from_directory(d))


def never_reports(config):
    raise ValueError("fails before its first result")


def with_data(config, data=None, scale=1):
    """Reports the sum of the bound data, times scale, plus x."""
    tune.report(loss=scale * sum(data) + config["x"])


def context(config):
    """Reports what train.get_context() says inside a real trial."""
    c = train.get_context()
    train.report({"loss": 0.0, "trial_id": c.get_trial_id(), "trial_name": c.get_trial_name(),
                  "trial_dir": c.get_trial_dir(), "experiment": c.get_experiment_name(),
                  "rank": c.get_world_rank(), "world": c.get_world_size(),
                  "first_checkpoint": train.get_checkpoint() is None})
