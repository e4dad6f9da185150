"""`from tune.search.bohb import TuneBOHB`: BOHB's model, tune's TPE with the "bohb"
preset ("search": {"type": "tpe", "preset": "bohb"}, docs/search.md). Ray pairs it with
HyperBandForBOHB (tune.schedulers has it: synchronous HyperBand); tune's preset models
ASHA's rungs, so ASHAScheduler is its natural partner. Not for: a ConfigSpace space or
bohb_config, which are refused.
"""

from . import Searcher

__all__ = ["TuneBOHB"]


class TuneBOHB(Searcher):
    """TuneBOHB(metric=..., mode=..., points_to_evaluate=..., seed=..., max_concurrent=...)."""

    search = {"type": "tpe", "preset": "bohb"}

    def __init__(self, space=None, bohb_config=None, metric=None, mode=None,
                 points_to_evaluate=None, seed=None, max_concurrent=0):
        if space is not None:
            raise ValueError("tune.search.bohb.TuneBOHB: space= (a ConfigSpace) is not "
                             "supported: give the space as tune.run's config= (Tuner's "
                             "param_space=)")
        if bohb_config:
            raise ValueError("tune.search.bohb.TuneBOHB: bohb_config is not supported: tune's "
                             "BOHB preset has BOHB's defaults (docs/search.md); leave it out")
        super().__init__(metric=metric, mode=mode, points_to_evaluate=points_to_evaluate,
                         seed=seed)
        if max_concurrent:
            self.set_max_concurrency(max_concurrent)
