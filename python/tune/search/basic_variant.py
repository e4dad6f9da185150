"""`from tune.search.basic_variant import BasicVariantGenerator`: Ray's module path for
random search; the class is tune.search's."""

from . import BasicVariantGenerator

__all__ = ["BasicVariantGenerator"]
