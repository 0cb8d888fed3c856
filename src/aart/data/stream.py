"""Bounded-memory building blocks of the evaluation, which reads a dataset once, in chunks:
distinct counts that are exact up to a limit and HyperLogLog beyond it, and a fixed-size
uniform sample (reservoir) for the measures that compare prompts with each other."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")

#: distinct items counted exactly up to this many (8 bytes each); beyond, estimated
EXACT_DISTINCT = 1_000_000
#: hashes gathered before they are merged into the exact set
_MERGE_EVERY = 500_000
#: HyperLogLog registers: 2**14, a relative standard error of about 0.8%
_P = 14
_M = 1 << _P


def hashes(items: Iterable[object]) -> np.ndarray:
    """64-bit hashes of hashable items (Python's: stable within one process, which is all a
    distinct count needs)."""
    return np.fromiter((hash(x) for x in items), dtype=np.int64).view(np.uint64)


def mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads any input hashes evenly over 64 bits."""
    z = h + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _leading_zeros(w: np.ndarray) -> np.ndarray:
    n = np.zeros(w.shape, dtype=np.uint8)
    for s in (32, 16, 8, 4, 2, 1):
        small = w < np.uint64(1 << (64 - s))
        n[small] += s
        w = np.where(small, w << np.uint64(s), w)
    return n


class DistinctCounter:
    """How many distinct items (given as 64-bit hashes): exact while there are at most
    ``limit``, then a HyperLogLog estimate in 16 KiB, however many more come."""

    def __init__(self, limit: int = EXACT_DISTINCT) -> None:
        self.limit = limit
        self._exact = np.empty(0, dtype=np.uint64)
        self._pending: list[np.ndarray] = []
        self._pending_n = 0
        self._registers: np.ndarray | None = None

    @property
    def estimated(self) -> bool:
        """Whether :meth:`count` is an estimate (more than ``limit`` distinct items)."""
        self._merge()
        return self._registers is not None

    def add(self, h: np.ndarray) -> None:
        if self._registers is not None:
            self._sketch(h)
            return
        self._pending.append(h)
        self._pending_n += h.size
        if self._pending_n >= _MERGE_EVERY:
            self._merge()

    def _merge(self) -> None:
        if self._pending:
            self._exact = np.unique(np.concatenate([self._exact, *self._pending]))
            self._pending, self._pending_n = [], 0
        if self._exact.size > self.limit:
            self._registers = np.zeros(_M, dtype=np.uint8)
            self._sketch(self._exact)
            self._exact = np.empty(0, dtype=np.uint64)

    def _sketch(self, h: np.ndarray) -> None:
        assert self._registers is not None
        z = mix(h)
        index = (z >> np.uint64(64 - _P)).astype(np.intp)
        rank = _leading_zeros((z << np.uint64(_P)) | np.uint64(1 << (_P - 1))) + 1
        np.maximum.at(self._registers, index, rank)

    def count(self) -> int:
        self._merge()
        if self._registers is None:
            return int(self._exact.size)
        alpha = 0.7213 / (1 + 1.079 / _M)
        estimate = alpha * _M * _M / float(np.sum(np.ldexp(1.0, -self._registers.astype(int))))
        zeros = int(np.count_nonzero(self._registers == 0))
        if estimate <= 2.5 * _M and zeros:
            estimate = _M * math.log(_M / zeros)  # linear counting for small counts
        return int(round(estimate))


class Reservoir(Generic[T]):
    """A uniform random sample of ``size`` items of a stream (Algorithm R); while the stream
    is no longer than ``size`` it holds every item, in order."""

    def __init__(self, size: int, seed: int = 0) -> None:
        self.size = size
        self.seen = 0
        self.items: list[T] = []
        self._rng = random.Random(seed)

    @property
    def complete(self) -> bool:
        """Whether the sample is the whole stream."""
        return self.seen <= self.size

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            if self.seen < self.size:
                self.items.append(item)
            else:
                j = self._rng.randrange(self.seen + 1)
                if j < self.size:
                    self.items[j] = item
            self.seen += 1
