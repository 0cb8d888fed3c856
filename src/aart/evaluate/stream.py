"""Moved to :mod:`aart.data.stream`; this name stays so old imports keep working."""

from ..data.stream import (  # noqa: F401
    EXACT_DISTINCT,
    DistinctCounter,
    Reservoir,
    hashes,
    mix,
)

__all__ = [
    "DistinctCounter",
    "EXACT_DISTINCT",
    "hashes",
    "mix",
    "Reservoir",
]
