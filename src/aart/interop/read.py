"""Moved to :mod:`aart.data.foreign`; this name stays so old imports keep working."""

from ..data.foreign import handles, iter_rows

__all__ = ["handles", "iter_rows"]
