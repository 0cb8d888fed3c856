"""Small distribution statistics shared by the metrics."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


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
    if not len(values):
        return {"n": 0}
    a = np.asarray(values, dtype=float)
    p = np.percentile(a, [5, 25, 50, 75, 95])
    return {
        "n": int(a.size),
        "mean": float(a.mean()),
        "std": float(a.std()),
        "min": float(a.min()),
        "p5": float(p[0]),
        "p25": float(p[1]),
        "median": float(p[2]),
        "p75": float(p[3]),
        "p95": float(p[4]),
        "max": float(a.max()),
    }


def histogram(values: Sequence[float], bins: int = 20) -> dict[str, list[float]]:
    if not len(values):
        return {"edges": [], "counts": []}
    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=bins)
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}
