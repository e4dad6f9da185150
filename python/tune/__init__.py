"""tune for people who live in Python: Ray Tune's vocabulary over tune's C engine.

    import tune

    def train(config):                      # runs in each trial's own process
        for epoch in range(1, 28):
            ...
            tune.report(val_loss=loss, val_accuracy=acc)

    analysis = tune.run(train, config={"lr": tune.loguniform(1e-4, 1e-1)}, num_samples=32,
                        metric="val_loss", mode="min",
                        scheduler=tune.ASHAScheduler(max_t=27, grace_period=1))
    print(analysis.best_config)

tune.run writes a space.json next to the database and runs the `tune` binary; results are
read back from the database (tune.Experiment). Standard library only; pandas when
installed. docs/python.md is the guide, docs/from-ray-tune.md the migration table.
Not for: sampling or scheduling in Python; the engine does both.
"""

import inspect as _inspect
import os as _os

# The result line has one definition, python/tune_report.py (shared with scripts that copy
# that file alone); this package only re-exports it.
import tune_report as _line

from ._checkpoint import Checkpoint
from ._checkpoint import from_env as _checkpoint_from_env
from ._context import get_context
from ._params import with_parameters
from ._ray import build_space, run
from ._results import Experiment, ExperimentAnalysis, TuneError, experiments
from ._run import SpaceError, find_binary, resume
from ._tuner import (CheckpointConfig, FailureConfig, Result, ResultGrid, RunConfig, TuneConfig,
                     Tuner, with_resources)
from ._space import (ASHAScheduler, AsyncHyperBandScheduler, CLIReporter, FIFOScheduler,
                     HyperBandScheduler, JupyterNotebookReporter, MedianStoppingRule,
                     PopulationBasedTraining, choice, grid_search, lograndint, loguniform,
                     qlograndint, qloguniform, qrandint, qrandn, quniform, randint, randn,
                     sample_from, uniform)
# Ray's module paths: tune.schedulers, tune.search.optuna, `from tune import train`, ...
from . import air, schedulers, search, session, train  # noqa: E402  (after the names they use)

__version__ = "0.1.0"

__all__ = [
    "run", "resume", "report", "get_checkpoint", "get_trial_dir", "get_trial_id", "TuneError",
    "SpaceError",
    "Experiment", "ExperimentAnalysis", "experiments", "build_space", "find_binary",
    "uniform", "quniform", "loguniform", "qloguniform", "randn", "qrandn", "randint",
    "qrandint", "lograndint", "qlograndint", "choice", "grid_search", "sample_from",
    "FIFOScheduler", "ASHAScheduler", "AsyncHyperBandScheduler", "MedianStoppingRule",
    "HyperBandScheduler", "PopulationBasedTraining", "CLIReporter", "JupyterNotebookReporter",
    "Tuner", "TuneConfig", "RunConfig", "FailureConfig", "CheckpointConfig", "ResultGrid",
    "Result", "with_resources", "with_parameters", "Checkpoint", "get_context", "train",
    "session", "air", "schedulers", "search",
]


def report(metrics=None, /, *, checkpoint=None, **kwargs):
    """Reports one result: tune.report(loss=0.4, accuracy=0.9), or Ray 2's form
    tune.report({"loss": 0.4}). One flushed JSON line on stdout (NaN as null; only rank 0
    under torchrun), written by python/tune_report.py. checkpoint= is handed to that helper,
    which defines what it does (issue 13); returns what it returns."""
    if metrics is not None:
        if not isinstance(metrics, dict):
            raise TypeError(f"tune.report: give metrics as keywords or one dict, not "
                            f"{type(metrics).__name__}")
        clash = set(metrics) & set(kwargs)
        if clash:
            raise TypeError(f"tune.report: {', '.join(sorted(clash))} given twice")
        kwargs = {**metrics, **kwargs}
    if checkpoint is None:
        return _line.report(**kwargs)
    # a tune.Checkpoint goes on as its path, a plain str
    checkpoint = checkpoint.path if isinstance(checkpoint, Checkpoint) else _os.fspath(checkpoint)
    if "checkpoint" not in _inspect.signature(_line.report).parameters:
        raise TypeError("tune.report(checkpoint=...) needs a tune_report.py that knows "
                        "checkpoints; until then save the checkpoint in the trial's folder as "
                        "checkpoint* (tune.get_trial_dir()), where tune finds it")
    return _line.report(**kwargs, checkpoint=checkpoint)


def get_checkpoint():
    """The checkpoint this attempt resumes from, as a tune.Checkpoint (TUNE_RESUME_FROM, set
    by tune when the trial is started again after Ctrl-C, a crash, a failure or a PBT
    exploit), or None on a first attempt. It is the path itself (a str): torch.load(ckpt),
    open(ckpt) and os.path.join(ckpt, ...) take it as before; ckpt.as_directory() and
    ckpt.path are Ray's spellings."""
    return _checkpoint_from_env()


def get_trial_dir():
    """The trial's own folder (TUNE_TRIAL_DIR; its working directory), or None outside a trial."""
    return _os.environ.get("TUNE_TRIAL_DIR") or None


def get_trial_id():
    """The trial's id (TUNE_TRIAL_ID), or None outside a trial."""
    return _os.environ.get("TUNE_TRIAL_ID") or None
