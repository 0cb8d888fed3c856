"""Text normalization and exact / near-duplicate detection (MinHash with LSH banding, so the
cost is linear in the number of texts rather than quadratic)."""

from __future__ import annotations

import hashlib
import re
import zlib
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[\w']+")
_PRIME = (1 << 61) - 1
_PERMS = 64
_BANDS = 16  # 16 bands x 4 rows: pairs above ~0.5 Jaccard become candidates, then verified


def normalize(text: str) -> str:
    """Lowercase, keep word characters, collapse whitespace."""
    return " ".join(_WORD.findall(text.lower()))


def text_hash(text: str) -> str:
    return hashlib.sha1(normalize(text).encode()).hexdigest()


def shingles(text: str, n: int = 3) -> set[int]:
    words = normalize(text).split()
    if len(words) < n:
        return {zlib.crc32(" ".join(words).encode())}
    return {zlib.crc32(" ".join(words[i : i + n]).encode()) for i in range(len(words) - n + 1)}


def jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


_rng = np.random.default_rng(20231117)
_A = _rng.integers(1, _PRIME, _PERMS, dtype=np.uint64)
_B = _rng.integers(0, _PRIME, _PERMS, dtype=np.uint64)


def minhash(sh: set[int]) -> np.ndarray:
    x = np.fromiter(sh, dtype=np.uint64, count=len(sh))
    # (a*x + b) mod 2^64 is a fine universal-ish hash for banding; exactness comes later.
    return ((np.outer(x, _A) + _B) >> np.uint64(3)).min(axis=0)


class DuplicateIndex:
    """Texts added one at a time; ``check`` says whether a new text duplicates a kept one
    (exact after normalization, or word-trigram Jaccard >= threshold via MinHash/LSH)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._exact: dict[str, int] = {}
        self._buckets: dict[tuple[int, bytes], list[int]] = defaultdict(list)
        self._shingles: dict[int, set[int]] = {}

    def check(self, text: str) -> tuple[str, int] | None:
        """("exact"|"near", key of the kept text it duplicates), or None."""
        h = text_hash(text)
        if h in self._exact:
            return "exact", self._exact[h]
        sh = shingles(text)
        for j in sorted({j for k in self._keys(sh) for j in self._buckets.get(k, ())}):
            if jaccard(sh, self._shingles[j]) >= self.threshold:
                return "near", j
        return None

    def add(self, text: str, key: int) -> None:
        self._exact.setdefault(text_hash(text), key)
        sh = shingles(text)
        self._shingles[key] = sh
        for k in self._keys(sh):
            self._buckets[k].append(key)

    @staticmethod
    def _keys(sh: set[int]) -> list[tuple[int, bytes]]:
        sig = minhash(sh)
        rows = _PERMS // _BANDS
        return [(b, sig[b * rows : (b + 1) * rows].tobytes()) for b in range(_BANDS)]


def find_duplicates(texts: Sequence[str], threshold: float) -> list[tuple[int, int, str]]:
    """Return (index, index_of_earlier_original, "exact"|"near") for every duplicate; the
    first occurrence of each group is kept."""
    out: list[tuple[int, int, str]] = []
    index = DuplicateIndex(threshold)
    for i, text in enumerate(texts):
        found = index.check(text)
        if found is not None:
            out.append((i, found[1], found[0]))
        else:
            index.add(text, i)
    return out
