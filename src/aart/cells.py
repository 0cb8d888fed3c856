"""Cells: one query's blueprint, exactly one value of every dimension. Attempts (one generation
call each) group several cells. The types live in :mod:`aart.types`; these names stay for the
code that imports them from here."""

from __future__ import annotations

from .types import Attempt, Cell, attempt_values, cells_from_values

__all__ = ["Attempt", "Cell", "attempt_values", "cells_from_values", "normalize_attempt"]


def normalize_attempt(line: object, default_queries: int) -> Attempt:
    """An attempt whose ``cells``, ``values`` and ``queries`` agree (see
    :meth:`Attempt.from_line`). Raises ValueError on a malformed line."""
    return Attempt.from_line(line, default_queries)
