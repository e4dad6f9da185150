"""What a running trial knows about itself, from the environment tune and torchrun set.

One reader for tune.train.get_context(), tune.session and tune.get_trial_*: tune sets
TUNE_TRIAL_ID, TUNE_TRIAL_DIR, TUNE_EXPERIMENT for every trial (trial/env.c); torchrun (or
tune's Slurm task) sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK/NODE_RANK.
Not for: anything outside a trial, where the trial's fields are None and the ranks those
of one process (rank 0 of 1), as Ray's context reads outside a distributed run.
"""

import os

__all__ = ["TrainContext", "get_context"]


def _int(name, default, *more):
    for n in (name,) + more:
        v = os.environ.get(n)
        if v not in (None, ""):
            return int(v)
    return default


class TrainContext:
    """Ray's ray.train.get_context(): the trial's id, name and folder, the experiment's
    name, and the process's ranks."""

    def get_trial_id(self):
        """The trial's number as a string ("7"), as tune's database and TUNE_TRIAL_ID name
        it; None outside a trial."""
        return os.environ.get("TUNE_TRIAL_ID") or None

    def get_trial_name(self):
        """trial_00007, the name the live table, `tune show` and the folder use."""
        tid = self.get_trial_id()
        return f"trial_{int(tid):05d}" if tid is not None else None

    def get_trial_dir(self):
        """The trial's own folder (its working directory)."""
        return os.environ.get("TUNE_TRIAL_DIR") or None

    def get_experiment_name(self):
        return os.environ.get("TUNE_EXPERIMENT") or None

    def get_world_rank(self):
        return _int("RANK", 0)

    def get_local_rank(self):
        return _int("LOCAL_RANK", 0)

    def get_world_size(self):
        return _int("WORLD_SIZE", 1)

    def get_local_world_size(self):
        return _int("LOCAL_WORLD_SIZE", self.get_world_size())

    def get_node_rank(self):
        return _int("GROUP_RANK", 0, "NODE_RANK")

    def get_storage(self):
        raise TypeError("get_context().get_storage() is not supported: a trial's files are in "
                        "its own folder, get_context().get_trial_dir()")

    def __repr__(self):
        return (f"TrainContext(trial={self.get_trial_name()}, experiment="
                f"{self.get_experiment_name()}, rank={self.get_world_rank()}/"
                f"{self.get_world_size()})")


def get_context():
    """The running trial's TrainContext (read from the environment each time it is asked)."""
    return TrainContext()
