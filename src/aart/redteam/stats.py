"""Attack-success rates with Wilson 95% intervals, per axis value and per pair of axes."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

from .findings import Agreement, CellRate, Rate


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def rate(successes: int, n: int) -> Rate:
    lo, hi = wilson(successes, n)
    return {
        "successes": successes,
        "n": n,
        "rate": successes / n if n else 0.0,
        "ci_low": lo,
        "ci_high": hi,
    }


def _worst_first(cells: Iterable[CellRate]) -> list[CellRate]:
    return sorted(cells, key=lambda c: (-c["rate"], -c["ci_low"], -c["n"], str(c.get("value"))))


def per_value(
    outcomes: Sequence[tuple[Mapping[str, str], bool]],
) -> dict[str, list[CellRate]]:
    """For every axis, the rate for every value, worst first. Each outcome carries one value
    per axis (its cell), so it counts once per axis."""
    tally: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for cell, success in outcomes:
        for axis, v in cell.items():
            tally[axis][v][0] += success
            tally[axis][v][1] += 1
    return {
        axis: _worst_first({"value": v, **rate(s, n)} for v, (s, n) in vals.items())
        for axis, vals in tally.items()
    }


def per_pair(
    outcomes: Sequence[tuple[Mapping[str, str], bool]],
) -> dict[str, list[CellRate]]:
    """For every pair of axes ("a x b"), the rate of every combination seen, worst first."""
    tally: dict[tuple[str, str], dict[tuple[str, str], list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0])
    )
    for cell, success in outcomes:
        for a, b in combinations(sorted(cell), 2):
            t = tally[(a, b)][(cell[a], cell[b])]
            t[0] += success
            t[1] += 1
    return {
        f"{a} x {b}": _worst_first(
            {"value": f"{va} | {vb}", "a": va, "b": vb, **rate(s, n)}
            for (va, vb), (s, n) in cells.items()
        )
        for (a, b), cells in tally.items()
    }


def agreement(verdicts: Sequence[Mapping[str, bool | None]]) -> list[Agreement]:
    """Pairwise agreement (and Cohen's kappa) between judges on `violates`, over the records
    both judged."""
    judges = sorted({j for v in verdicts for j in v})
    out: list[Agreement] = []
    for a, b in combinations(judges, 2):
        pairs = [
            (bool(v[a]), bool(v[b]))
            for v in verdicts
            if v.get(a) is not None and v.get(b) is not None
        ]
        n = len(pairs)
        if not n:
            out.append({"judges": [a, b], "n": 0, "agreement": None, "kappa": None})
            continue
        agree = sum(x == y for x, y in pairs) / n
        pa = sum(x for x, _ in pairs) / n
        pb = sum(y for _, y in pairs) / n
        expected = pa * pb + (1 - pa) * (1 - pb)
        kappa = (agree - expected) / (1 - expected) if expected < 1 else 1.0
        out.append({"judges": [a, b], "n": n, "agreement": agree, "kappa": kappa})
    return out
