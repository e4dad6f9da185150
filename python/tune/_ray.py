"""tune.run, tune.resume-free front: what Ray users pass that _run does not take as it is.

Searcher objects (tune.search.*) become tune.run's own arguments (metric, mode,
points_to_evaluate, seed, max_concurrent_trials and the "search" object), and a trainable
with bound objects (tune.with_parameters, functools.partial) becomes an importable
function (_params.bind). Everything else goes to _run unchanged, which builds the
space.json and lets the engine judge it. Not for: any rule of its own about spaces.
"""

import os

from . import _run
from ._params import bind
from .search import resolve

__all__ = ["run", "build_space"]


def run(run_or_experiment, config=None, **kwargs):
    """tune.run (python/tune/_run.py's), with searcher objects and bound trainables."""
    _run.not_in_a_trial()  # before bind() writes anything
    kwargs = resolve(kwargs)
    folder = os.path.dirname(os.path.abspath(kwargs.get("storage") or "tune.db"))
    return _run.run(bind(run_or_experiment, folder), config, **kwargs)


def build_space(trainable, config=None, **kwargs):
    """tune.build_space: the space.json object tune.run would write (a bound trainable's
    objects are written under ./tune_params/ so that the command it names runs)."""
    kwargs = resolve(kwargs)
    return _run.build_space(bind(trainable, os.getcwd()), config, **kwargs)


run.__doc__ = _run.run.__doc__
build_space.__doc__ = _run.build_space.__doc__
