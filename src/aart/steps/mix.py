"""Data-mix strategies: pure functions from value lists to attempts (lists of axis values).

- per_value: the paper's scheme; N attempts per value of a primary axis, k sampled values of
  each other axis per attempt.
- balanced: every value of every axis is used as equally as possible (per axis, use counts
  differ by at most 1 when unweighted).
- pairwise: every pair of values across the chosen axes appears in at least one attempt.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from itertools import combinations

Attempt = dict[str, list[str]]


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


def per_value(
    values: Mapping[str, Sequence[str]],
    primary: str,
    attempts_per_value: int,
    sample: Mapping[str, int],
    weights: Mapping[str, Mapping[str, float]],
    seed: int,
) -> list[Attempt]:
    rng = random.Random(seed)
    out: list[Attempt] = []
    for v in values[primary]:
        n = max(1, round(attempts_per_value * weights.get(primary, {}).get(v, 1.0)))
        for _ in range(n):
            attempt: Attempt = {primary: [v]}
            for axis, vals in values.items():
                if axis != primary:
                    attempt[axis] = _weighted_sample(
                        rng, vals, sample.get(axis, 1), weights.get(axis, {})
                    )
            out.append(attempt)
    return out


def _quotas(
    rng: random.Random, vals: Sequence[str], slots: int, cap: int, weights: Mapping[str, float]
) -> dict[str, int]:
    """Split ``slots`` uses among values in proportion to weight (largest remainder, ties in
    seeded random order), no value above ``cap``. Unweighted, counts differ by at most 1."""
    order = list(vals)
    rng.shuffle(order)
    w = {v: max(weights.get(v, 1.0), 0.0) or 1e-9 for v in order}
    quota = dict.fromkeys(order, 0)
    left = slots
    open_ = [v for v in order]
    while left > 0 and open_:
        total = sum(w[v] for v in open_)
        raw = {v: left * w[v] / total for v in open_}
        give = {v: min(int(raw[v]), cap - quota[v]) for v in open_}
        rest = left - sum(give.values())
        for v in sorted(open_, key=lambda v: -(raw[v] - int(raw[v])))[:rest]:
            if quota[v] + give[v] < cap:
                give[v] += 1
        for v in open_:
            quota[v] += give[v]
        left = slots - sum(quota.values())
        open_ = [v for v in open_ if quota[v] < cap]
    return quota


def _balanced_axis(
    rng: random.Random, vals: Sequence[str], k: int, n_attempts: int, weights: Mapping[str, float]
) -> list[list[str]]:
    """Deal quotas into n_attempts groups of k distinct values: each attempt takes the k values
    with the most uses left, which always succeeds when no quota exceeds n_attempts."""
    remaining = _quotas(rng, vals, n_attempts * k, n_attempts, weights)
    groups = []
    for _ in range(n_attempts):
        pick = sorted(remaining, key=lambda v: (-remaining[v], rng.random()))[:k]
        for v in pick:
            remaining[v] -= 1
        groups.append(sorted(pick))
    return groups


def balanced(
    values: Mapping[str, Sequence[str]],
    sample: Mapping[str, int],
    attempts: int | None,
    weights: Mapping[str, Mapping[str, float]],
    seed: int,
) -> list[Attempt]:
    rng = random.Random(seed)
    ks = {axis: min(sample.get(axis, 1), len(vals)) for axis, vals in values.items()}
    n = attempts or max(math.ceil(len(vals) / ks[axis]) for axis, vals in values.items())
    per_axis = {
        axis: _balanced_axis(rng, vals, ks[axis], n, weights.get(axis, {}))
        for axis, vals in values.items()
    }
    return [{axis: per_axis[axis][i] for axis in values} for i in range(n)]


def pairwise(
    values: Mapping[str, Sequence[str]],
    axes: Sequence[str],
    sample: Mapping[str, int],
    weights: Mapping[str, Mapping[str, float]],
    seed: int,
    candidates: int = 24,
) -> list[Attempt]:
    """Greedy covering array (AETG style): each new attempt is the best of several random
    candidates at covering still-uncovered pairs. Axes outside ``axes`` are sampled."""
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

    out: list[Attempt] = []
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
    for case in cases:
        attempt: Attempt = {axis: [case[axis]] for axis in axes}
        for axis, vals in values.items():
            if axis not in attempt:
                attempt[axis] = _weighted_sample(
                    rng, vals, sample.get(axis, 1), weights.get(axis, {})
                )
        out.append({axis: attempt[axis] for axis in values})
    return out
