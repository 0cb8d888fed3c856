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
    density = _posterior(successes, n, acc, seed)
    # highest density first: the fewest grid points that hold 95% of the posterior
    order = np.argsort(-density, kind="stable")
    held = order[: int(np.searchsorted(np.cumsum(density[order]), 0.95)) + 1]
    return float(GRID[held].min()), float(GRID[held].max())


def _posterior(successes: int, n: int, acc: Accuracy, seed: int) -> np.ndarray:
    """The posterior of the true rate on GRID (see :func:`_interval`)."""
    log_q, log_not_q = _log_judged(acc, seed)
    log_lik = successes * log_q + (n - successes) * log_not_q
    density = np.exp(log_lik - log_lik.max()).sum(axis=0)
    return density / density.sum()


def _binomial_posterior(k: int, n: int) -> np.ndarray:
    """The posterior on GRID of a rate seen k times in n, a uniform prior (Beta(k+1, n-k+1))."""
    tiny = 1e-300
    log = (k * np.log(np.maximum(GRID, tiny)) if k else 0.0) + (
        (n - k) * np.log(np.maximum(1.0 - GRID, tiny)) if n - k else 0.0
    )
    density = np.exp(log - np.max(log))
    return density / density.sum()


def stratified_rate(
    strata: list[tuple[int, int, Accuracy]],
    seed: int = 0,
    draws: int = 20_000,
    default: Accuracy | None = None,
) -> Corrected:
    """The overall rate corrected stratum by stratum, each (successes, n) with its judge's
    own figures (a language's, where the judge errs more in it): the point is the strata's
    corrected rates weighted by their sizes, the 95% interval that of the weighted sum of
    draws from each stratum's posterior. One stratum, or one figure for all, is
    :func:`corrected_rate` of the totals (none with replies: of nothing, by ``default``)."""
    strata = [(k, n, a) for k, n, a in strata if n]
    total = sum(n for _, n, _ in strata)
    figures = {a for _, _, a in strata}
    if len(figures) <= 1:
        acc = next(iter(figures), default)
        if acc is None:
            raise ValueError("stratified_rate of no replies needs a default accuracy")
        return corrected_rate(sum(k for k, _, _ in strata), total, acc, seed)
    points = [rogan_gladen(k / n, a.sensitivity, a.specificity) for k, n, a in strata]
    rng = np.random.default_rng(seed)
    mixed = np.zeros(draws)
    for k, n, a in strata:
        # a deterministic check corrects nothing: the observed count's own posterior
        post = _binomial_posterior(k, n) if a.exact else _posterior(k, n, a, seed)
        mixed += (n / total) * rng.choice(GRID, size=draws, p=post)
    point = (
        None
        if any(p is None for p in points)
        else sum(
            (n / total) * p for (_, n, _), p in zip(strata, points, strict=True) if p is not None
        )
    )
    lo, hi = (float(x) for x in np.quantile(mixed, [0.025, 0.975]))
    if point is not None:
        lo, hi = min(lo, point), max(hi, point)
    names = sorted({a.source for a in figures})
    return {
        "rate": point,
        "ci_low": lo,
        "ci_high": hi,
        # the judged replies' mean figures (what the strata's weights make of them)
        "sensitivity": sum(n * a.sensitivity for _, n, a in strata) / total,
        "specificity": sum(n * a.specificity for _, n, a in strata) / total,
        "source": "per stratum: " + "; ".join(names),
    }


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
