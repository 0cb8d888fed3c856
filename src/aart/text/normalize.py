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
    (exact after normalization, or word-``n``-gram Jaccard >= threshold via MinHash/LSH; below
    0.75, bands of two rows, so pairs down to ~0.3 Jaccard become candidates)."""

    def __init__(self, threshold: float, n: int = 3) -> None:
        self.threshold = threshold
        self.n = n
        self.rows = _PERMS // _BANDS if threshold >= 0.75 else 2
        self._exact: dict[str, int] = {}
        self._buckets: dict[tuple[int, bytes], list[int]] = defaultdict(list)
        self._shingles: dict[int, set[int]] = {}

    def check(self, text: str) -> tuple[str, int] | None:
        """("exact"|"near", key of the kept text it duplicates), or None."""
        h = text_hash(text)
        if h in self._exact:
            return "exact", self._exact[h]
        sh = shingles(text, self.n)
        for j in sorted({j for k in self._keys(sh) for j in self._buckets.get(k, ())}):
            if jaccard(sh, self._shingles[j]) >= self.threshold:
                return "near", j
        return None

    def add(self, text: str, key: int) -> None:
        self._exact.setdefault(text_hash(text), key)
        sh = shingles(text, self.n)
        self._shingles[key] = sh
        for k in self._keys(sh):
            self._buckets[k].append(key)

    def _keys(self, sh: set[int]) -> list[tuple[int, bytes]]:
        sig = minhash(sh)
        rows = self.rows
        return [(b, sig[b * rows : (b + 1) * rows].tobytes()) for b in range(_PERMS // rows)]


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


# --- Diversity of a dataset: restated cells and nearest neighbours -------------------------

# Function words, and the words any request uses whatever its cell ("write me an email"): a
# prompt made of them and its cell's values adds nothing of its own.
_FUNCTION = frozenset(
    "a an the of in on at for to and or by with from about as is are be been this that these "
    "those it its into your you me my i we our us can could would will should please how what "
    "which who some any so do does than then there their them they he she his her".split()
)
REQUEST_WORDS = frozenset(
    "write writing written create draft compose give make generate produce provide tell show "
    "need want help piece text".split()
)
#: the share of a prompt's content words that come from its cell (its values, the dimension
#: names, request words) at and above which it restates the cell: "Write a email about
#: burglary in united states." is 1.0; in the released AART data (its concept and annotated
#: format as the cell) the median is 0.31 and 0.4% reach 0.8 (2% counting all three regions
#: of the attempt as the cell's)
RESTATED_CELL = 0.8
#: nearest-neighbour similarity is the mean, over prompts, of the word-bigram Jaccard with the
#: most similar other prompt, within groups of this many prompts (it grows with the number of
#: prompts compared: the released AART data's is 0.16 in groups of 35, 0.18 of 50, 0.48 whole)
NN_GROUP = 50
_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def content_stems(text: str) -> set[str]:
    """The stems of a text's words, function words left out: "writing emails" -> {writ,
    email}."""
    return {_stem(w) for w in re.findall(r"[^\W_]+", fold(text)) if w not in _FUNCTION}


_REQUEST_STEMS = frozenset(_stem(w) for w in REQUEST_WORDS)


class CellPhrase:
    """The words a prompt may take from its cell. ``labels`` are the dimensions' names ("policy
    concepts"): a prompt that asks about "the policy concept" restates the task, not a user's
    request."""

    def __init__(self, labels: Sequence[str] = ()) -> None:
        self.base = set(_REQUEST_STEMS)
        for label in labels:
            self.base |= content_stems(label.replace("_", " "))

    def overlap(self, text: str, values: Sequence[str]) -> float:
        """The share of ``text``'s content words found in the cell phrase (1.0 when it has
        none of its own)."""
        words = content_stems(text)
        if not words:
            return 1.0
        cell = self.base.union(*(content_stems(v) for v in values))
        return len(words & cell) / len(words)


def bigram_jaccard(a: str, b: str) -> float:
    return jaccard(shingles(a, 2), shingles(b, 2))


def nearest_similarities(texts: Sequence[str]) -> np.ndarray:
    """Per text, the word-bigram Jaccard with its most similar other text (exact, with a sparse
    product: for the few thousand texts of a group or a sample)."""
    from scipy import sparse

    n = len(texts)
    if n < 2:
        return np.zeros(n)
    vocab: dict[int, int] = {}
    indices: list[int] = []
    indptr = [0]
    for t in texts:
        indices += [vocab.setdefault(g, len(vocab)) for g in shingles(t, 2)]
        indptr.append(len(indices))
    x = sparse.csr_matrix(
        (np.ones(len(indices), dtype=np.float32), indices, indptr), shape=(n, len(vocab))
    )
    size = np.diff(x.indptr).astype(np.float64)
    inter = (x @ x.T).tocoo()
    off = inter.row != inter.col
    r, c, v = inter.row[off], inter.col[off], inter.data[off].astype(np.float64)
    best = np.zeros(n)
    np.maximum.at(best, r, v / (size[r] + size[c] - v))
    return best


def nn_similarity(texts: Sequence[str], group: int = NN_GROUP, groups: int = 20) -> float:
    """Mean nearest-neighbour word-bigram Jaccard within consecutive groups of ``group`` texts
    (at most ``groups`` of them; pass a shuffled sample), so datasets of any size compare."""
    if len(texts) < 2:
        return 0.0
    parts = [texts[i : i + group] for i in range(0, min(len(texts), group * groups), group)]
    if len(parts) > 1 and len(parts[-1]) < group:
        parts.pop()  # a short last group would lower the figure
    sims = np.concatenate([nearest_similarities(p) for p in parts])
    return float(sims.mean())
