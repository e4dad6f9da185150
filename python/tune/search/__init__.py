"""`tune.search`: Ray's searcher objects, as the "search" of space.json they stand for.

Each object is thin: it holds metric/mode (as Ray's searchers do), points_to_evaluate and
a seed, and to_json() gives the "search" object (None: random search). tune.run and
tune.Tuner take one as search_alg and turn it into their own arguments (resolve(), below):
the engine's searchers are random and TPE with the "optuna" or "bohb" preset
(docs/search.md), so OptunaSearch and HyperOptSearch (both TPE) and TuneBOHB map there;
a searcher tune does not have (BayesOptSearch's Gaussian process, Ax, Nevergrad, ...)
raises at once, naming TPE. Not for: searching in Python; the engine chooses.
"""

from .. import _space

__all__ = ["Searcher", "BasicVariantGenerator", "ConcurrencyLimiter", "Repeater",
           "SearchAlgorithm", "create_searcher", "resolve"]


class Searcher:
    """What every searcher object says: metric, mode, points_to_evaluate, seed, and the
    "search" object of space.json (to_json(); None for random search). The values are
    kept as given: they become tune.run's arguments, which the engine judges."""

    search = None  # the "search" object of space.json, or None for random search

    def __init__(self, metric=None, mode=None, points_to_evaluate=None, seed=None):
        self.metric, self.mode = metric, mode
        self.points_to_evaluate, self.seed = points_to_evaluate, seed
        self.max_concurrent = None

    def to_json(self):
        """The "search" object of space.json, or None (random search)."""
        return dict(self.search) if self.search is not None else None

    def run_kwargs(self):
        """The tune.run arguments this searcher stands for (those it sets)."""
        kw = {"metric": self.metric, "mode": self.mode,
              "points_to_evaluate": self.points_to_evaluate, "seed": self.seed,
              "max_concurrent_trials": self.max_concurrent}
        return {k: v for k, v in kw.items() if v is not None}

    def set_search_properties(self, metric, mode, config, **spec):
        """Ray's hook for filling metric/mode later: kept when not set yet, as Ray does."""
        self.metric = self.metric or metric
        self.mode = self.mode or mode
        return True

    def set_max_concurrency(self, max_concurrent):
        self.max_concurrent = max_concurrent
        return True

    def __repr__(self):
        return f"tune.search.{type(self).__name__}(search={self.to_json()!r})"


SearchAlgorithm = Searcher


class BasicVariantGenerator(Searcher):
    """Ray's default: random sampling (and grids), drawn in C from the seed."""

    def __init__(self, points_to_evaluate=None, max_concurrent=0, constant_grid_search=False,
                 random_state=None):
        if constant_grid_search:
            raise ValueError("tune.search.BasicVariantGenerator: constant_grid_search=True is "
                             "not supported: tune draws random parameters afresh for every "
                             "grid point (docs/space.md, 'Grid search and trial order')")
        super().__init__(points_to_evaluate=points_to_evaluate, seed=random_state)
        if max_concurrent:
            self.set_max_concurrency(max_concurrent)


class ConcurrencyLimiter(Searcher):
    """ConcurrencyLimiter(searcher, max_concurrent=N): the searcher, with at most N trials
    at once (tune.run's max_concurrent_trials, space.json's "max_concurrent")."""

    def __init__(self, searcher, max_concurrent, batch=False):
        if not isinstance(searcher, Searcher):
            raise TypeError("tune.search.ConcurrencyLimiter: wrap a searcher object "
                            f"(tune.search.optuna.OptunaSearch(), ...), not {searcher!r}")
        if batch:
            raise ValueError("tune.search.ConcurrencyLimiter: batch=True is not supported: "
                             "tune's searchers choose each configuration when its trial "
                             "starts; leave it out")
        self.searcher = searcher
        self.search = searcher.to_json()
        self.metric, self.mode = searcher.metric, searcher.mode
        self.points_to_evaluate, self.seed = searcher.points_to_evaluate, searcher.seed
        self.set_max_concurrency(max_concurrent)


class Repeater(Searcher):
    """Ray's Repeater (each configuration run `repeat` times, the searcher told the mean):
    not in tune."""

    def __init__(self, searcher=None, repeat=1, set_index=True):
        raise TypeError(
            "tune.search.Repeater is not supported: tune's searchers take one result per "
            "configuration and random draws are fresh for every trial, so repeats cannot be "
            "averaged for the searcher. Repeat inside the function instead: run the "
            "evaluation for several seeds (for s in range(3): ...) and tune.report the mean "
            "(examples/ray_style/README.md)")


# Searchers of Ray that tune has no counterpart for, with the module Ray has them in.
_ABSENT = {"AxSearch": "ax", "BayesOptSearch": "bayesopt", "HEBOSearch": "hebo",
           "NevergradSearch": "nevergrad", "SkOptSearch": "skopt", "ZOOptSearch": "zoopt",
           "BlendSearch": "flaml", "CFO": "flaml", "DragonflySearch": "dragonfly",
           "SigOptSearch": "sigopt"}


def absent(name, why):
    """A class that refuses to be made, saying why and naming tune's TPE."""
    def __init__(self, *a, **k):
        raise TypeError(f"tune.search.{_ABSENT.get(name, '')}{'.' if name in _ABSENT else ''}"
                        f"{name} is not supported ({why}): tune's searchers are random "
                        "(the default) and TPE: search_alg=tune.search.optuna.OptunaSearch() "
                        "or search_alg='tpe' (docs/search.md)")
    return type(name, (Searcher,), {"__init__": __init__, "__doc__": f"Ray's {name}: "
                                    "not in tune; making one raises, naming TPE."})


def create_searcher(search_alg, **kwargs):
    """Ray's create_searcher("optuna", metric=..., mode=...): the searcher of that name."""
    from . import bohb, hyperopt, optuna
    names = {"variant_generator": BasicVariantGenerator, "random": BasicVariantGenerator,
             "optuna": optuna.OptunaSearch, "hyperopt": hyperopt.HyperOptSearch,
             "bohb": bohb.TuneBOHB}
    if search_alg in names:
        return names[search_alg](**kwargs)
    for cls, mod in _ABSENT.items():
        if search_alg == mod:
            return absent(cls, "tune has no such searcher")(**kwargs)
    raise ValueError(f"unknown searcher {search_alg!r}; tune has: {', '.join(names)}"
                     + _space.did_you_mean(str(search_alg), list(names)))


def resolve(kwargs):
    """tune.run's keyword arguments with a searcher object in search_alg turned into what
    it stands for: its metric, mode, points_to_evaluate, seed and max_concurrent_trials,
    which must agree with those given to tune.run (a ValueError names both), and
    search_alg its "search" object (left out for random search). Anything else in
    search_alg ('tpe', a dict) is left for tune.run. Returns a new dict."""
    s = kwargs.get("search_alg")
    if not isinstance(s, Searcher):
        return dict(kwargs)
    out = dict(kwargs)
    for k, v in s.run_kwargs().items():
        given = out.get(k)
        # compared as space.json will hold them: ("a", "b") is the list ["a", "b"]
        if given is not None and _space.to_json(given, k) != _space.to_json(v, k):
            raise ValueError(f"{k}={given!r} but the searcher {type(s).__name__} says "
                             f"{k}={v!r}: give it in one place")
        out[k] = v
    search = s.to_json()
    if search is None:
        out.pop("search_alg")
    else:
        out["search_alg"] = search
    return out
