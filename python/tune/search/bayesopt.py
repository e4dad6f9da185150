"""`from tune.search.bayesopt import BayesOptSearch`: a Gaussian-process optimiser, which
tune does not have; making one raises, naming tune's TPE. Not for: anything else.
"""

from . import absent

__all__ = ["BayesOptSearch"]

BayesOptSearch = absent("BayesOptSearch", "it models the objective with a Gaussian process, "
                        "which tune does not have")
