"""`from tune.search.skopt import SkOptSearch`: not in tune; making one raises, naming tune's TPE."""

from . import absent

__all__ = ["SkOptSearch"]

SkOptSearch = absent("SkOptSearch", "tune has no skopt searcher")
