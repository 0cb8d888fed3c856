"""Small distribution statistics shared by the metrics."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at 0 and n the bound is exactly 0 (or 1): the formula leaves floating-point noise
    # (0/11 gave 2.8e-17), which decided the "worst" of several 0% values
    lo = 0.0 if successes == 0 else max(0.0, center - half)
    hi = 1.0 if successes == n else min(1.0, center + half)
    return lo, hi


def evenness(counts: Sequence[int], k: int | None = None) -> float:
    """Normalized Shannon entropy of ``counts`` over ``k`` categories (default len(counts)):
    1.0 when every category is used equally, 0.0 when one takes everything."""
    k = k or len(counts)
    total = sum(counts)
    if k <= 1 or total == 0:
        return 0.0
    h = -sum((c / total) * math.log(c / total) for c in counts if c)
    return max(0.0, h / math.log(k))  # never -0.000 from rounding


def top_share(counts: Sequence[int], top: int = 5) -> float:
    """Share of the total held by the ``top`` largest counts."""
    total = sum(counts)
    return sum(sorted(counts, reverse=True)[:top]) / total if total else 0.0


def describe(values: Sequence[float]) -> dict[str, float]:
    return describe_counts(Counter(values))


def describe_counts(counts: Mapping[int, int] | Mapping[float, int]) -> dict[str, float]:
    """Mean, standard deviation, extremes and percentiles (numpy's linear interpolation) of
    the values ``counts`` holds with their multiplicities: exact, in memory of the number of
    distinct values (prompt lengths: a few hundred), not of the number of prompts."""
    pairs = sorted((float(v), int(c)) for v, c in counts.items() if c > 0)
    if not pairs:
        return {"n": 0}
    vals = np.array([v for v, _ in pairs])
    mult = np.array([c for _, c in pairs], dtype=np.int64)
    n = int(mult.sum())
    mean = float((vals * mult).sum() / n)
    std = math.sqrt(float((mult * (vals - mean) ** 2).sum() / n))
    ends = np.cumsum(mult)  # the sorted position after the last copy of each value

    def at(k: int) -> float:
        return float(vals[int(np.searchsorted(ends, k, side="right"))])

    def percentile(q: float) -> float:
        h = (n - 1) * (q / 100)  # numpy's virtual index, float for float
        lo = math.floor(h)
        a, b, t = at(lo), at(min(lo + 1, n - 1)), h - lo
        return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t  # as numpy's _lerp

    return {
        "n": n,
        "mean": mean,
        "std": std,
        "min": float(vals[0]),
        "p5": percentile(5),
        "p25": percentile(25),
        "median": percentile(50),
        "p75": percentile(75),
        "p95": percentile(95),
        "max": float(vals[-1]),
    }


def histogram(values: Sequence[float], bins: int = 20) -> dict[str, list[float]]:
    return histogram_counts(Counter(values), bins)


def histogram_counts(
    counts: Mapping[int, int] | Mapping[float, int], bins: int = 20
) -> dict[str, list[float]]:
    """numpy's histogram of the values ``counts`` holds with their multiplicities."""
    if not counts:
        return {"edges": [], "counts": []}
    vals = np.array(list(counts), dtype=float)
    hist, edges = np.histogram(vals, bins=bins, weights=np.array(list(counts.values())))
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in hist]}
