"""`from tune.search.hyperopt import HyperOptSearch`: HyperOpt's algorithm is TPE, which
tune runs as Optuna's TPE ("search": {"type": "tpe"}, docs/search.md). HyperOpt's own
n_initial_points and gamma are not tune's numbers: giving them is refused. Not for: a
HyperOpt space (hp.*), which is refused, naming tune's distributions.
"""

from . import Searcher

__all__ = ["HyperOptSearch"]


class HyperOptSearch(Searcher):
    """HyperOptSearch(metric=..., mode=..., points_to_evaluate=..., random_state_seed=...):
    TPE with tune's Optuna preset."""

    search = {"type": "tpe", "preset": "optuna"}

    def __init__(self, space=None, metric=None, mode=None, points_to_evaluate=None,
                 n_initial_points=20, random_state_seed=None, gamma=0.25):
        if space is not None:
            raise ValueError("tune.search.hyperopt.HyperOptSearch: space= (a HyperOpt hp.* "
                             "space) is not supported: give the space as tune.run's config= "
                             "(Tuner's param_space=) with tune.uniform(), tune.choice(), ...")
        if n_initial_points != 20 or gamma != 0.25:
            raise ValueError("tune.search.hyperopt.HyperOptSearch: n_initial_points and gamma "
                             "are HyperOpt's settings; tune's TPE uses Optuna's (at least 10 "
                             "random trials; gamma(n) = min(ceil(0.1 n), 25), docs/search.md): "
                             "leave them out")
        super().__init__(metric=metric, mode=mode, points_to_evaluate=points_to_evaluate,
                         seed=random_state_seed)
