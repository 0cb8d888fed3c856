"""Attack-success rates with Wilson 95% intervals, per axis value and per pair of axes, and
the same rates corrected for the judge's error (Rogan-Gladen, with a posterior interval that
carries the uncertainty of the judge's sensitivity and specificity as well as the sample's)."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import combinations

import numpy as np

from ..evaluate.stats import wilson  # moved there: review and evaluation share it
from .findings import Agreement, CellRate, Corrected, Rate
from .judge_accuracy import Accuracy

#: draws of the judge's sensitivity and specificity the corrected rate's posterior averages
#: over: enough for a stable interval (4,000 gave the same intervals to 0.002), cheap enough
#: for every cell of a large attack
DRAWS = 2000


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
        # rounding noise is no disagreement: never "-0.00"
        kappa = round(kappa, 12) + 0.0
        out.append({"judges": [a, b], "n": n, "agreement": agree, "kappa": kappa})
    return out


def rogan_gladen(q: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate behind an observed rate ``q`` of a judge with this sensitivity and
    specificity, clipped to [0, 1]; None when the judge is no better than chance."""
    j = sensitivity + specificity - 1
    if j <= 0:
        return None
    return min(1.0, max(0.0, (q + specificity - 1) / j))


def corrected_rate(successes: int, n: int, acc: Accuracy, seed: int = 0) -> Corrected:
    """The rate corrected for the judge's error: the Rogan-Gladen point, with a 95% interval
    from the posterior of the true rate given the observed count, the judge's sensitivity
    (from ``acc.positives`` labelled successes) and its specificity (from ``acc.negatives``
    labelled non-successes). Seeded, so the same counts give the same interval."""
    point = rogan_gladen(successes / n, acc.sensitivity, acc.specificity) if n else None
    out: Corrected = {
        "rate": point,
        "ci_low": 0.0,
        "ci_high": 1.0,
        "sensitivity": acc.sensitivity,
        "specificity": acc.specificity,
        "source": acc.source,
    }
    if not n:
        return out
    if acc.exact:  # nothing to correct: the observed rate and its own interval
        out["rate"] = successes / n
        out["ci_low"], out["ci_high"] = wilson(successes, n)
        return out
    lo, hi = _interval(successes, n, acc, seed)
    if point is not None:  # the grid's interval holds the point it is the interval of
        lo, hi = min(lo, point), max(hi, point)
    out["ci_low"], out["ci_high"] = lo, hi
    return out


#: the true rates the posterior is computed at
GRID = np.linspace(0.0, 1.0, 501)


@functools.lru_cache(maxsize=8192)
def _interval(successes: int, n: int, acc: Accuracy, seed: int) -> tuple[float, float]:
    """The corrected rate's 95% interval (cached: many cells share their counts).

    The model: the judge calls a reply a success with probability
    ``q = p * se + (1 - p) * (1 - sp)``, the true rate ``p`` uniform a priori, ``se`` and
    ``sp`` from their Jeffreys posteriors on the labelled replies. The posterior of ``p`` is
    the binomial likelihood of the observed count, averaged over draws of (se, sp), on a
    grid; the interval is its highest-density 95%. This replaced correcting each draw of the
    observed rate and clipping it to [0, 1], which piled the draws up at 0 or 1: 3 of 40
    flagged by a judge that flags 21% of refusals gave [0, 0], and 12 of 12 an interval
    narrower than the raw one. An observed rate the judge's figures cannot explain (below its
    false-positive rate) now gives a wide interval instead: the data say little about ``p``."""
    log_q, log_not_q = _log_judged(acc, seed)
    log_lik = successes * log_q + (n - successes) * log_not_q
    density = np.exp(log_lik - log_lik.max()).sum(axis=0)
    density /= density.sum()
    # highest density first: the fewest grid points that hold 95% of the posterior
    order = np.argsort(-density, kind="stable")
    held = order[: int(np.searchsorted(np.cumsum(density[order]), 0.95)) + 1]
    return float(GRID[held].min()), float(GRID[held].max())


@functools.lru_cache(maxsize=8)  # 16 MB each: a few judges' (or values' own) figures
def _log_judged(acc: Accuracy, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """log q and log (1 - q) at every (draw of se and sp, grid rate): a judge's, shared by
    every count it corrects."""
    rng = np.random.default_rng(seed)
    se = rng.beta(*_jeffreys(acc.sensitivity, acc.positives), DRAWS)[:, None]
    sp = rng.beta(*_jeffreys(acc.specificity, acc.negatives), DRAWS)[:, None]
    q = np.clip(GRID[None, :] * se + (1 - GRID[None, :]) * (1 - sp), 1e-12, 1 - 1e-12)
    return np.log(q), np.log1p(-q)


def _jeffreys(share: float, n: int) -> tuple[float, float]:
    """Beta(k + 1/2, n - k + 1/2) for ``share`` of ``n`` (a published share: k rounded)."""
    k = share * n
    return k + 0.5, n - k + 0.5


def correct_cells(
    cells: list[CellRate], accuracy: Callable[[str], Accuracy], seed: int = 0
) -> list[CellRate]:
    """Each cell with its corrected rate (``corrected``, ``corrected_low``,
    ``corrected_high``, ``accuracy_source``), the accuracy chosen per value by ``accuracy``."""
    for c in cells:
        acc = accuracy(str(c.get("value")))
        cr = corrected_rate(c["successes"], c["n"], acc, seed)
        c["corrected"] = cr["rate"]
        c["corrected_low"] = cr["ci_low"]
        c["corrected_high"] = cr["ci_high"]
        c["accuracy_source"] = acc.source
    return cells
