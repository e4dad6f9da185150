"""`from tune.schedulers import ASHAScheduler, ...`: Ray's module path for the schedulers.

The classes are tune's own (python/tune/_space.py): each only says which "scheduler" of
space.json it stands for, and the engine judges it. HyperBandForBOHB is tune's synchronous
HyperBand (pair it with tune.search.bohb.TuneBOHB, or better with ASHAScheduler, whose
rungs tune's BOHB preset models: docs/search.md). PB2 has no counterpart and says so.
Not for: schedulers written in Python (TrialScheduler subclasses): the engine decides.
"""

from ._space import (ASHAScheduler, AsyncHyperBandScheduler, FIFOScheduler,
                     HyperBandScheduler, MedianStoppingRule, PopulationBasedTraining,
                     scheduler_of)

__all__ = ["ASHAScheduler", "AsyncHyperBandScheduler", "FIFOScheduler", "HyperBandScheduler",
           "HyperBandForBOHB", "MedianStoppingRule", "PopulationBasedTraining", "PB2",
           "TrialScheduler", "create_scheduler"]


class HyperBandForBOHB(HyperBandScheduler):
    """Ray's HyperBandForBOHB: synchronous HyperBand, which tune runs as "type":
    "hyperband" (docs/hyperband.md). Ray pauses and resumes its trials by their own
    checkpoints, as tune's hyperband does."""


class PB2:
    """Ray's PB2 (a Gaussian-process bandit over PBT's explore step): not in tune."""

    def __init__(self, *a, **k):
        raise TypeError("tune.schedulers.PB2 is not supported (it explores with a Gaussian "
                        "process, which tune does not have): use "
                        "tune.schedulers.PopulationBasedTraining(metric=..., mode=..., "
                        "perturbation_interval=..., hyperparam_mutations={...}) (docs/pbt.md)")


class TrialScheduler:
    """Ray's base class for schedulers written in Python: not in tune."""

    CONTINUE, PAUSE, STOP = "CONTINUE", "PAUSE", "STOP"

    def __init__(self, *a, **k):
        raise TypeError("a scheduler written in Python (a TrialScheduler subclass) is not "
                        "supported: the engine decides in C; use FIFOScheduler, ASHAScheduler, "
                        "HyperBandScheduler, MedianStoppingRule or PopulationBasedTraining")


def create_scheduler(scheduler, **kwargs):
    """Ray's create_scheduler("async_hyperband", max_t=...): the scheduler of that name."""
    names = {"fifo": FIFOScheduler, "async_hyperband": ASHAScheduler, "asha": ASHAScheduler,
             "median_stopping_rule": MedianStoppingRule, "median": MedianStoppingRule,
             "hyperband": HyperBandScheduler, "hb_bohb": HyperBandForBOHB,
             "pbt": PopulationBasedTraining, "pb2": PB2}
    cls = names.get(scheduler)
    if cls is None:
        scheduler_of(scheduler)  # raises, naming what there is
        raise ValueError(f"unknown scheduler {scheduler!r}; known: {', '.join(names)}")
    return cls(**kwargs)
