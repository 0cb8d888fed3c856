"""The data mixes (``scope.mix``): pure functions from value lists to *cells*, grouped into
attempts.

A cell is one query's blueprint: exactly one value of every dimension. An attempt is one
generation call that asks for several cells at once, so the instructions are paid once. The
mixes' guarantees hold over cells (queries), not over attempts:

- per_value: the paper's scheme; every value of the primary axis gets the same number of cells
  (attempts_per_value x queries); each attempt samples k values of every other axis and deals
  them round-robin to its cells. ``restrict`` narrows, per primary value, the values of
  another axis its attempts may sample (the kinds of text that fit a crime, say).
- balanced: over all cells, every value of every axis is used as equally as possible (per axis,
  use counts differ by at most 1 when unweighted).
- pairwise: every pair of values across the chosen axes appears in at least one cell.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from itertools import combinations

from ..types import Cell

#: the cells of one attempt, in order (scope.make_attempt makes it an aart.types.Attempt)
Cells = list[Cell]


def _weighted_sample(
    rng: random.Random, values: Sequence[str], k: int, weights: Mapping[str, float]
) -> list[str]:
    """k distinct values, drawn with probability proportional to weight (default 1)."""
    pool = list(values)
    chosen: list[str] = []
    for _ in range(min(k, len(pool))):
        w = [max(weights.get(v, 1.0), 0.0) for v in pool]
        if sum(w) <= 0:
            w = [1.0] * len(pool)
        i = rng.choices(range(len(pool)), weights=w)[0]
        chosen.append(pool.pop(i))
    return sorted(chosen)


def chunk(cells: Sequence[Cell], queries: int) -> list[Cells]:
    """Group cells into attempts of ``queries`` cells (the last may be smaller)."""
    return [list(cells[i : i + queries]) for i in range(0, len(cells), queries)]


def _dealt(rng: random.Random, values: Sequence[str], n: int) -> list[str]:
    """``n`` picks from ``values`` in rounds, each round a fresh shuffle of all of them."""
    out: list[str] = []
    while len(out) < n and values:
        round_ = list(values)
        rng.shuffle(round_)
        out += round_
    return out[:n]


#: per primary value, per other axis, the values its cells may take (scope.restrict)
Restrict = Mapping[str, Mapping[str, Sequence[str]]]


def allowed(restrict: Restrict, primary_value: str, axis: str, values: Sequence[str]) -> list[str]:
    """The values of ``axis`` a cell of ``primary_value`` may take, in ``values``' order."""
    only = restrict.get(primary_value, {}).get(axis)
    if only is None:
        return list(values)
    keep = set(only)
    return [v for v in values if v in keep]


def per_value(
    values: Mapping[str, Sequence[str]],
    primary: str,
    attempts_per_value: int,
    sample: Mapping[str, int],
    weights: Mapping[str, Mapping[str, float]],
    seed: int,
    queries: int,
    restrict: Restrict | None = None,
) -> list[Cells]:
    rng = random.Random(seed)
    out: list[Cells] = []
    for v in values[primary]:
        n = max(1, round(attempts_per_value * weights.get(primary, {}).get(v, 1.0)))
        for _ in range(n):
            sampled = {
                axis: _weighted_sample(
                    rng,
                    allowed(restrict or {}, v, axis, vals),
                    sample.get(axis, 1),
                    weights.get(axis, {}),
                )
                for axis, vals in values.items()
                if axis != primary
            }
            # Deal each axis's sampled values in shuffled rounds: an attempt uses them evenly
            # (counts differ by at most one), and with more queries than values the pairings
            # change from round to round instead of repeating the same cells.
            columns = {axis: _dealt(rng, vals, queries) for axis, vals in sampled.items()}
            cells: Cells = [
                {axis: v if axis == primary else columns[axis][q] for axis in values}
                for q in range(queries)
            ]
            out.append(cells)
    return out


def _quotas(
    rng: random.Random, vals: Sequence[str], slots: int, weights: Mapping[str, float]
) -> dict[str, int]:
    """Split ``slots`` uses among values in proportion to weight (largest remainder, ties in
    seeded random order). Unweighted, counts differ by at most 1."""
    order = list(vals)
    rng.shuffle(order)
    w = {v: max(weights.get(v, 1.0), 0.0) or 1e-9 for v in order}
    total = sum(w.values())
    raw = {v: slots * w[v] / total for v in order}
    quota = {v: int(raw[v]) for v in order}
    rest = slots - sum(quota.values())
    for v in sorted(order, key=lambda v: -(raw[v] - int(raw[v])))[:rest]:
        quota[v] += 1
    return quota


def balanced(
    values: Mapping[str, Sequence[str]],
    attempts: int | None,
    queries: int,
    weights: Mapping[str, Mapping[str, float]],
    seed: int,
) -> list[Cells]:
    """``attempts`` x ``queries`` cells (by default just enough cells for every value of the
    largest axis to appear once); per axis, quotas dealt in a seeded random order."""
    rng = random.Random(seed)
    n_cells = attempts * queries if attempts else max(len(vals) for vals in values.values())
    columns: dict[str, list[str]] = {}
    for axis, vals in values.items():
        quota = _quotas(rng, vals, n_cells, weights.get(axis, {}))
        column = [v for v, k in quota.items() for _ in range(k)]
        rng.shuffle(column)
        columns[axis] = column
    cells = [{axis: columns[axis][i] for axis in values} for i in range(n_cells)]
    return chunk(cells, queries)


def pairwise(
    values: Mapping[str, Sequence[str]],
    axes: Sequence[str],
    queries: int,
    weights: Mapping[str, Mapping[str, float]],
    seed: int,
    candidates: int = 24,
) -> list[Cells]:
    """Greedy covering array (AETG style) over cells: each new cell is the best of several
    random candidates at covering still-uncovered pairs. Axes outside ``axes`` are sampled."""
    rng = random.Random(seed)
    axes = list(axes)
    uncovered: set[tuple[str, str, str, str]] = set()
    for a, b in combinations(axes, 2):
        for va in values[a]:
            for vb in values[b]:
                uncovered.add((a, va, b, vb))

    def pairs_of(case: Mapping[str, str]) -> set[tuple[str, str, str, str]]:
        return {(a, case[a], b, case[b]) for a, b in combinations(axes, 2)}

    order = {axis: i for i, axis in enumerate(axes)}

    def new_pairs(case: Mapping[str, str], axis: str, value: str) -> int:
        """How many uncovered pairs choosing ``value`` for ``axis`` would cover."""
        n = 0
        for a, v in case.items():
            pair = (a, v, axis, value) if order[a] < order[axis] else (axis, value, a, v)
            n += pair in uncovered
        return n

    if len(axes) == 1:
        cases: list[dict[str, str]] = [{axes[0]: v} for v in values[axes[0]]]
    else:
        cases = []
        while uncovered:
            seed_pair = min(uncovered)  # deterministic anchor: guarantees progress
            best: dict[str, str] | None = None
            best_gain = -1
            for _ in range(candidates):
                case = {seed_pair[0]: seed_pair[1], seed_pair[2]: seed_pair[3]}
                rest = [x for x in axes if x not in case]
                rng.shuffle(rest)
                for axis in rest:
                    options = list(values[axis])
                    rng.shuffle(options)
                    gains = [new_pairs(case, axis, v) for v in options]
                    case[axis] = options[gains.index(max(gains))]
                gain = len(pairs_of(case) & uncovered)
                if gain > best_gain:
                    best, best_gain = dict(case), gain
            assert best is not None
            uncovered -= pairs_of(best)
            cases.append(best)
    cells: list[Cell] = []
    for case in cases:
        cell = dict(case)
        for axis, vals in values.items():
            if axis not in cell:
                cell[axis] = _weighted_sample(rng, vals, 1, weights.get(axis, {}))[0]
        cells.append({axis: cell[axis] for axis in values})
    return chunk(cells, queries)
