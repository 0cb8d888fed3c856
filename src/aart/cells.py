"""Cells: one query's blueprint, exactly one value of every dimension. Attempts (one generation
call each) group several cells; these helpers keep an attempt's fields consistent when a human
edits the blueprint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Cell = dict[str, str]


def attempt_values(cells: Sequence[Cell]) -> dict[str, list[str]]:
    """The values an attempt's cells use, per axis, sorted (what its template lists)."""
    axes: list[str] = []
    for c in cells:
        axes += [a for a in c if a not in axes]
    return {a: sorted({c[a] for c in cells if a in c}) for a in axes}


def cells_from_values(values: Mapping[str, Sequence[str]], queries: int) -> list[Cell]:
    """Cells for an attempt that lists only ``values``: each axis's values dealt round-robin,
    so every listed value is used when there are enough queries."""
    return [
        {axis: vals[q % len(vals)] for axis, vals in values.items() if vals} for q in range(queries)
    ]


def normalize_attempt(line: dict[str, Any], default_queries: int) -> dict[str, Any]:
    """An attempt with ``cells``, ``values`` and ``queries`` that agree. ``cells`` win; a
    ``queries`` below their number keeps the first cells, above it repeats them; an attempt
    with ``values`` only gets cells dealt from them. Raises ValueError on a malformed line."""
    if not line.get("id"):
        raise ValueError("each line needs an `id`")
    cells = line.get("cells")
    if cells is not None:
        if (
            not isinstance(cells, list)
            or not cells
            or not all(
                isinstance(c, dict) and all(isinstance(v, str) for v in c.values()) for c in cells
            )
        ):
            raise ValueError("`cells` must be a non-empty list of {dimension: value} mappings")
        queries = int(line.get("queries", len(cells)))
        if queries < 1:
            raise ValueError("`queries` must be at least 1")
        cells = [dict(cells[q % len(cells)]) for q in range(queries)]
    else:
        values = line.get("values")
        if not isinstance(values, dict) or not values:
            raise ValueError("each line needs `cells` (or a `values` mapping)")
        queries = int(line.get("queries", default_queries))
        cells = cells_from_values({a: list(v) for a, v in values.items()}, queries)
    return {**line, "cells": cells, "values": attempt_values(cells), "queries": len(cells)}
