"""`from tune.search.ax import AxSearch`: not in tune; making one raises, naming tune's TPE."""

from . import absent

__all__ = ["AxSearch"]

AxSearch = absent("AxSearch", "tune has no ax searcher")
