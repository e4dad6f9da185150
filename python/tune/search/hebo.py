"""`from tune.search.hebo import HEBOSearch`: not in tune; making one raises, naming tune's TPE."""

from . import absent

__all__ = ["HEBOSearch"]

HEBOSearch = absent("HEBOSearch", "tune has no hebo searcher")
