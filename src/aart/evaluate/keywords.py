"""Moved to :mod:`aart.text.keywords`; this name stays so old imports keep working."""

from ..text.keywords import (  # noqa: F401
    BATCH,
    KeywordMatcher,
    Texts,
    as_column,
    batched,
    inflections,
    normalize_for_match,
)

__all__ = [
    "as_column",
    "BATCH",
    "batched",
    "inflections",
    "KeywordMatcher",
    "normalize_for_match",
    "Texts",
]
