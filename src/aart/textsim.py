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


def find_duplicates(texts: Sequence[str], threshold: float) -> list[tuple[int, int, str]]:
    """Return (index, index_of_earlier_original, "exact"|"near") for every duplicate; the
    first occurrence of each group is kept."""
    out: list[tuple[int, int, str]] = []
    seen: dict[str, int] = {}
    buckets: dict[tuple[int, bytes], list[int]] = defaultdict(list)
    kept_shingles: dict[int, set[int]] = {}
    rows = _PERMS // _BANDS
    for i, text in enumerate(texts):
        h = text_hash(text)
        if h in seen:
            out.append((i, seen[h], "exact"))
            continue
        seen[h] = i
        sh = shingles(text)
        sig = minhash(sh)
        keys = [(b, sig[b * rows : (b + 1) * rows].tobytes()) for b in range(_BANDS)]
        match = None
        candidates = {j for k in keys for j in buckets.get(k, ())}
        for j in sorted(candidates):
            if jaccard(sh, kept_shingles[j]) >= threshold:
                match = j
                break
        if match is not None:
            out.append((i, match, "near"))
            continue
        kept_shingles[i] = sh
        for k in keys:
            buckets[k].append(i)
    return out
