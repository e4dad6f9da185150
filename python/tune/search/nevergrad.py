"""`from tune.search.nevergrad import NevergradSearch`: not in tune; making one raises, naming tune's TPE."""

from . import absent

__all__ = ["NevergradSearch"]

NevergradSearch = absent("NevergradSearch", "tune has no nevergrad searcher")
