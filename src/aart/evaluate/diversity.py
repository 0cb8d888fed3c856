"""Lexical and semantic diversity: distinct-n, Self-BLEU, embedding diversity, Vendi score,
duplicate rates. Everything that could be quadratic is linear or sampled."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ..data.stream import DistinctCounter, Reservoir, mix
from ..text.keywords import Texts, as_column
from ..text.normalize import find_duplicates, normalize

# a word: letters, digits, underscores, combining marks and apostrophes (Unicode)
_TOKEN = r"[\w']+"


def tokenize(texts: Texts) -> pl.Series:
    """The lowercased words of every text (a list per text), in polars (Rust), for a whole
    batch at once."""
    return as_column(texts).str.to_lowercase().str.extract_all(_TOKEN)


def tokens(text: str) -> list[str]:
    return [str(w) for w in tokenize([text])[0]]


class TokenHashes:
    """The words of a batch of texts as 64-bit hashes, with each word's text number and the
    hashes of the bigrams and trigrams inside a text: what distinct-n, the vocabulary and the
    lexical embedding are counted from, without a Python loop per word."""

    def __init__(self, texts: Texts) -> None:
        words = tokenize(texts)
        lengths = words.list.len().fill_null(0).to_numpy()
        self.rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        self.unigrams = words.explode().drop_nulls().hash(seed=0).to_numpy()
        self.words = words

    def ngrams(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(text number, hash) of every n-gram (n = 1, 2, 3) inside a text."""
        if n == 1:
            return self.rows, self.unigrams
        k = self.unigrams.size - n + 1
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
        inside = self.rows[:k] == self.rows[n - 1 :]
        h = self.unigrams[:k]
        for i in range(1, n):
            h = _combine(h, self.unigrams[i : i + k])
        return self.rows[:k][inside], h[inside]


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return mix(a * np.uint64(0x9E3779B97F4A7C15) + b)


def ngrams(toks: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)]


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Unique n-grams over all n-grams in the corpus."""
    measures = DiversityMeasures()
    measures.add(texts)
    return measures.result()[0][f"distinct_{n}"]


def bleu(hyp: Sequence[str], refs: Sequence[Sequence[str]], max_n: int = 4) -> float:
    """Sentence BLEU-4 with clipped counts, closest-length brevity penalty and add-epsilon
    smoothing for zero precisions (Chen & Cherry method 1)."""
    if not hyp or not refs:
        return 0.0
    log_p = 0.0
    for n in range(1, max_n + 1):
        h = Counter(ngrams(hyp, n))
        denom = sum(h.values())
        if denom == 0:
            log_p += math.log(1e-9)
            continue
        max_ref: Counter[tuple[str, ...]] = Counter()
        for r in refs:
            for g, c in Counter(ngrams(r, n)).items():
                if g in h and c > max_ref[g]:
                    max_ref[g] = c
        clipped = sum(min(c, max_ref[g]) for g, c in h.items())
        log_p += math.log((clipped or 0.1) / denom)
    ref_len = min((abs(len(r) - len(hyp)), len(r)) for r in refs)[1]
    bp = 1.0 if len(hyp) > ref_len else math.exp(1 - ref_len / len(hyp))
    return bp * math.exp(log_p / max_n)


def self_bleu(texts: Sequence[str], sample: int = 200, seed: int = 0) -> float:
    """Mean BLEU of each sampled text against the other sampled texts (higher = less diverse)."""
    idx = list(range(len(texts)))
    if len(idx) > sample:
        idx = random.Random(seed).sample(idx, sample)
    toks = tokenize([texts[i] for i in idx]).to_list()
    if len(toks) < 2:
        return 0.0
    scores = [bleu(t, toks[:i] + toks[i + 1 :]) for i, t in enumerate(toks)]
    return float(np.mean(scores))


class GramStats:
    """Running sums over L2-normalized vectors: enough for the mean pairwise cosine and the
    Vendi score without ever holding an n x n matrix (memory is d x d, whatever n is)."""

    def __init__(self, dim: int) -> None:
        self.n = 0
        self.nonzero = 0  # a text without tokens has a zero vector: similar to nothing
        self.total = np.zeros(dim, dtype=np.float64)
        self.gram = np.zeros((dim, dim), dtype=np.float64)

    def add(self, x: np.ndarray) -> None:
        x = x.astype(np.float64, copy=False)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms == 0, 1, norms)
        self.n += x.shape[0]
        self.nonzero += int((norms > 0).sum())
        self.total += x.sum(axis=0)
        # the d x d product of a batch in single precision (half the time; each entry sums at
        # most a few thousand products of unit vectors), the running sum in double
        x32 = x.astype(np.float32)
        self.gram += x32.T @ x32

    def mean_pairwise_cosine(self) -> float:
        """Mean cosine over distinct pairs: (|sum x|^2 - sum |x|^2) / (n (n - 1)), where
        |x|^2 is 1 for a normalized vector and 0 for an empty text's."""
        if self.n < 2:
            return 0.0
        return float((self.total @ self.total - self.nonzero) / (self.n * (self.n - 1)))

    def vendi(self) -> float:
        """Vendi score, exp of the entropy of the eigenvalues of K/n, K = X X^T; the non-zero
        eigenvalues of K/n are those of X^T X / n."""
        if self.n == 0:
            return 0.0
        eig = np.linalg.eigvalsh(self.gram / self.n)
        eig = eig[eig > 1e-12]
        eig = eig / eig.sum()
        return float(np.exp(-(eig * np.log(eig)).sum()))


def hashed_ngram_vectors(texts: Sequence[str], dim: int = 1024) -> np.ndarray:
    """Bag of word unigrams and bigrams, hashed into ``dim`` buckets (a lexical embedding)."""
    return _bag(TokenHashes(texts), len(texts), dim)


def _bag(words: TokenHashes, n: int, dim: int = 1024, first: int = 0) -> np.ndarray:
    """The hashed bag of unigrams and bigrams of texts ``first`` .. ``first + n``."""
    cells = []
    for size in (1, 2):
        rows, h = words.ngrams(size)
        keep = (rows >= first) & (rows < first + n)
        cells.append((rows[keep] - first) * dim + (h[keep] % np.uint64(dim)).astype(np.int64))
    counts = np.bincount(np.concatenate(cells), minlength=n * dim)
    return counts.reshape(n, dim).astype(np.float32)


def _normalized_hashes(texts: Sequence[str], words: TokenHashes, s: pl.Series) -> np.ndarray:
    """Hashes of :func:`aart.text.normalize.normalize` of every text (what makes two prompts exact
    duplicates): for ASCII text its words joined by spaces, the rest in Python. ``s``: the
    texts as a column."""
    joined = words.words.list.join(" ")
    other = (s.str.len_bytes() != s.str.len_chars()).arg_true()
    if other.len():
        joined = joined.scatter(other, [normalize(texts[i]) for i in other.to_list()])
    return joined.hash(seed=0).to_numpy()


def duplicate_rates(texts: Sequence[str], threshold: float = 0.8) -> dict[str, float]:
    dups = find_duplicates(texts, threshold)
    n = len(texts) or 1
    exact = sum(1 for _, _, k in dups if k == "exact")
    return {"exact_duplicate_rate": exact / n, "near_duplicate_rate": (len(dups) - exact) / n}


#: prompts kept (a uniform sample beyond this many) for the measures that compare prompts
#: with each other: Self-BLEU's sample, near-duplicates, embeddings
SAMPLE = 100_000


class DiversityMeasures:
    """The diversity measures of a stream of texts, added chunk by chunk in flat memory:
    distinct n-grams and the vocabulary are counted exactly up to millions of distinct items
    (then estimated, about ±1%), lexical diversity and Vendi run over every text, and the
    measures that compare texts with each other use a uniform sample of ``sample`` texts,
    which is every text when there are no more."""

    def __init__(self, *, sample: int | None = None, seed: int = 0) -> None:
        self.seed = seed
        self.n = 0
        self.grams = {n: DistinctCounter() for n in (1, 2, 3)}
        self.gram_totals = {1: 0, 2: 0, 3: 0}
        self.distinct_texts = DistinctCounter()
        self.lexical = GramStats(1024)
        self.sample: Reservoir[str] = Reservoir(sample or SAMPLE, seed)

    def add(self, texts: Sequence[str], column: pl.Series | None = None) -> None:
        """Add texts (and, when the caller has it, the same texts as a polars column)."""
        self.n += len(texts)
        column = as_column(texts) if column is None else column
        words = TokenHashes(column)
        for n in (1, 2, 3):
            _, h = words.ngrams(n)
            self.gram_totals[n] += h.size
            self.grams[n].add(h)
        self.distinct_texts.add(_normalized_hashes(texts, words, column))
        for i in range(0, len(texts), 4096):  # 4096 x 1024 floats at a time
            self.lexical.add(_bag(words, min(4096, len(texts) - i), first=i))
        self.sample.extend(texts)

    def result(
        self, embedder: Any = None, self_bleu_sample: int = 200
    ) -> tuple[dict[str, Any], list[str]]:
        """The measures, and notes on those estimated or taken on the sample."""
        sample = self.sample.items
        out: dict[str, Any] = {
            **{
                f"distinct_{n}": self.grams[n].count() / self.gram_totals[n]
                if self.gram_totals[n]
                else 0.0
                for n in (1, 2, 3)
            },
            "self_bleu": self_bleu(sample, self_bleu_sample, self.seed),
            "lexical_diversity": 1 - self.lexical.mean_pairwise_cosine(),
            "vendi_lexical": self.lexical.vendi(),
        }
        notes = []
        if self.sample.complete:
            out.update(duplicate_rates(sample))
        else:
            near = duplicate_rates(sample)["near_duplicate_rate"]
            exact = 1 - self.distinct_texts.count() / self.n
            out.update(exact_duplicate_rate=exact, near_duplicate_rate=near)
            notes.append(
                f"Self-BLEU, near-duplicates and embedding diversity were measured on a uniform "
                f"random sample of {len(sample):,} of the {self.n:,} prompts (seed {self.seed}); "
                "the other measures on every prompt"
            )
        if any(g.estimated for g in self.grams.values()) or self.distinct_texts.estimated:
            notes.append(
                "distinct-n, the vocabulary and the exact-duplicate rate count distinct items "
                "exactly up to 1,000,000, then estimate (HyperLogLog, about ±1%)"
            )
        if embedder is not None:
            emb = embedder.gram(sample)
            out["embedding_diversity"] = 1 - emb.mean_pairwise_cosine()
            out["vendi_embedding"] = emb.vendi()
        return out, notes

    @property
    def vocabulary(self) -> int:
        """Distinct words (the distinct unigrams)."""
        return self.grams[1].count()


def diversity(
    texts: Sequence[str], *, embedder: Any = None, self_bleu_sample: int = 200, seed: int = 0
) -> dict[str, Any]:
    measures = DiversityMeasures(seed=seed)
    measures.add(texts)
    return measures.result(embedder, self_bleu_sample)[0]
