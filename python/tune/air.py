"""Ray 2.0-2.6's ray.air names: `from tune.air import session, Checkpoint, RunConfig`.
The same objects as tune.train's and tune's; Not for: anything of its own.
"""

from . import session
from ._checkpoint import Checkpoint
from ._tuner import CheckpointConfig, FailureConfig, Result, RunConfig
from .train import ScalingConfig

__all__ = ["session", "Checkpoint", "RunConfig", "FailureConfig", "CheckpointConfig",
           "Result", "ScalingConfig"]
