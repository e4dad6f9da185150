"""`from tune import train`: Ray 2's ray.train names inside a function trainable.

    from tune import train

    def objective(config):
        ckpt = train.get_checkpoint()             # a tune.Checkpoint, or None
        ...
        with tempfile.TemporaryDirectory() as d:
            save(d)
            train.report({"loss": loss}, checkpoint=train.Checkpoint.from_directory(d))

The same functions as tune.report / tune.get_checkpoint (one definition each, in the
package); RunConfig, FailureConfig and CheckpointConfig are tune's (Ray 2 imports them
from ray.train). Not for: Ray Train's trainers (TorchTrainer, ScalingConfig): a trial here
is a process, and `torchrun` as the trial's command is the distributed form
(docs/python.md, "A command").
"""

from ._checkpoint import Checkpoint
from ._context import TrainContext, get_context
from ._tuner import CheckpointConfig, FailureConfig, Result, RunConfig

__all__ = ["report", "get_checkpoint", "get_context", "TrainContext", "Checkpoint",
           "RunConfig", "FailureConfig", "CheckpointConfig", "Result"]


def report(metrics, *, checkpoint=None):
    """Ray's train.report(metrics, checkpoint=...): one result; checkpoint a
    tune.Checkpoint (or a path). The same as tune.report."""
    import tune
    return tune.report(metrics, checkpoint=checkpoint)


def get_checkpoint():
    """The checkpoint this attempt starts from (a tune.Checkpoint), or None: after a
    failure, a resume, a PBT exploit (the donor's) or a promotion."""
    import tune
    return tune.get_checkpoint()


def _refuse(name, instead):
    def refuse(*a, **k):
        raise TypeError(f"tune.train.{name} is not supported: {instead}")
    refuse.__name__ = name
    return refuse


_TRIAL_IS_A_PROCESS = ("a trial is a process of its own; for several GPUs per trial give a "
                       "torchrun command as the trainable and resources_per_trial={'gpu': N} "
                       "(docs/python.md, 'A command'; examples/torch_ddp)")
ScalingConfig = _refuse("ScalingConfig", _TRIAL_IS_A_PROCESS)
DataConfig = _refuse("DataConfig", _TRIAL_IS_A_PROCESS)
get_dataset_shard = _refuse("get_dataset_shard", "load the data inside the function "
                            "(or pass it with tune.with_parameters)")
