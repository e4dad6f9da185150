"""`from tune.search.optuna import OptunaSearch`: Optuna's default sampler, TPE, which
tune runs in C (search/parzen.c reproduces Optuna 3.1's TPESampler): "search":
{"type": "tpe", "preset": "optuna"}. Not for: other Optuna samplers or a define-by-run
space, which are refused, naming what works.
"""

from . import Searcher

__all__ = ["OptunaSearch"]


class OptunaSearch(Searcher):
    """OptunaSearch(metric=..., mode=..., points_to_evaluate=..., seed=...): TPE as Optuna's
    TPESampler with its defaults. space, sampler and evaluated_rewards are refused: the
    space is tune.run's config (param_space), the sampler is tune's TPE."""

    search = {"type": "tpe", "preset": "optuna"}

    def __init__(self, space=None, metric=None, mode=None, points_to_evaluate=None,
                 sampler=None, seed=None, evaluated_rewards=None):
        if space is not None:
            raise ValueError("tune.search.optuna.OptunaSearch: space= is not supported (an "
                             "Optuna space or a define-by-run function): give the space as "
                             "tune.run's config= (Tuner's param_space=) with tune.loguniform(), "
                             "tune.choice(), ...")
        if sampler is not None:
            raise ValueError("tune.search.optuna.OptunaSearch: sampler= is not supported: "
                             "tune runs Optuna's default sampler, TPE (TPESampler with its "
                             "default settings), in C; leave sampler out for it, or use "
                             "tune.search.bohb.TuneBOHB() for BOHB's preset")
        if evaluated_rewards is not None:
            raise ValueError("tune.search.optuna.OptunaSearch: evaluated_rewards is not "
                             "supported: give the points as points_to_evaluate and let them "
                             "run (or record them in an earlier experiment)")
        super().__init__(metric=metric, mode=mode, points_to_evaluate=points_to_evaluate,
                         seed=seed)
