"""`from tune.search.zoopt import ZOOptSearch`: not in tune; making one raises, naming tune's TPE."""

from . import absent

__all__ = ["ZOOptSearch"]

ZOOptSearch = absent("ZOOptSearch", "tune has no zoopt searcher")
