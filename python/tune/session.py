"""Ray 2.0-2.6's session API (`from ray.air import session`) over the same functions as
tune.train: session.report(metrics, checkpoint=...), session.get_checkpoint() and the
trial's context. `from tune import session` or `from tune.air import session`.
Not for: anything tune.train does not do.
"""

from ._context import get_context as _ctx
from .train import get_checkpoint, report

__all__ = ["report", "get_checkpoint", "get_trial_id", "get_trial_name", "get_trial_dir",
           "get_experiment_name", "get_world_rank", "get_local_rank", "get_world_size",
           "get_local_world_size", "get_node_rank"]


def get_trial_id():
    return _ctx().get_trial_id()


def get_trial_name():
    return _ctx().get_trial_name()


def get_trial_dir():
    return _ctx().get_trial_dir()


def get_experiment_name():
    return _ctx().get_experiment_name()


def get_world_rank():
    return _ctx().get_world_rank()


def get_local_rank():
    return _ctx().get_local_rank()


def get_world_size():
    return _ctx().get_world_size()


def get_local_world_size():
    return _ctx().get_local_world_size()


def get_node_rank():
    return _ctx().get_node_rank()
