"""The one text normalization, and exact / near-duplicate detection (MinHash with LSH banding,
so the cost is linear in the number of texts rather than quadratic).

Every comparison of text in aart (refusal detection, keyword coverage, value names, scope
filters, duplicates) starts from :func:`canonical` (or :func:`fold`, its case-free form), so
"café" typed two ways, a typographic apostrophe or a non-breaking space never split what a
reader sees as the same text."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import zlib
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[\w']+")
_PRIME = (1 << 61) - 1
_PERMS = 64
_BANDS = 16  # 16 bands x 4 rows: pairs above ~0.5 Jaccard become candidates, then verified


# typographic quotes and apostrophes (as Llama 3 writes "can’t") become straight ones
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})


def canonical(text: str) -> str:
    """NFKC, straight quotes, single spaces: the same text however it was typed."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).split())


def fold(text: str) -> str:
    """:func:`canonical`, casefolded: for comparisons that ignore case."""
    return canonical(text).casefold()


def normalize(text: str) -> str:
    """The words of :func:`fold` (word characters and apostrophes), single-spaced: what
    duplicate detection compares."""
    return " ".join(_WORD.findall(fold(text)))


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
