"""Lexical and semantic diversity: distinct-n, Self-BLEU, embedding diversity, Vendi score,
duplicate rates. Everything that could be quadratic is linear or sampled."""

from __future__ import annotations

import math
import random
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..textsim import find_duplicates

_TOKEN = re.compile(r"[\w']+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def ngrams(toks: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)]


def distinct_n(texts: Iterable[str], n: int) -> float:
    """Unique n-grams over all n-grams in the corpus."""
    seen: set[tuple[str, ...]] = set()
    total = 0
    for t in texts:
        grams = ngrams(tokens(t), n)
        total += len(grams)
        seen.update(grams)
    return len(seen) / total if total else 0.0


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
    toks = [tokens(texts[i]) for i in idx]
    if len(toks) < 2:
        return 0.0
    scores = [bleu(t, toks[:i] + toks[i + 1 :]) for i, t in enumerate(toks)]
    return float(np.mean(scores))


def _batches(texts: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(texts), size):
        yield texts[i : i + size]


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
        self.gram += x.T @ x

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
    x = np.zeros((len(texts), dim), dtype=np.float32)
    for i, t in enumerate(texts):
        toks = tokens(t)
        for g in toks + [" ".join(b) for b in ngrams(toks, 2)]:
            x[i, zlib.crc32(g.encode()) % dim] += 1.0
    return x


def lexical_gram(texts: Sequence[str], batch: int = 4096) -> GramStats:
    stats = GramStats(1024)
    for chunk in _batches(texts, batch):
        stats.add(hashed_ngram_vectors(chunk))
    return stats


def duplicate_rates(texts: Sequence[str], threshold: float = 0.8) -> dict[str, float]:
    dups = find_duplicates(texts, threshold)
    n = len(texts) or 1
    exact = sum(1 for _, _, k in dups if k == "exact")
    return {"exact_duplicate_rate": exact / n, "near_duplicate_rate": (len(dups) - exact) / n}


def diversity(
    texts: Sequence[str], *, embedder: Any = None, self_bleu_sample: int = 200, seed: int = 0
) -> dict[str, Any]:
    lex = lexical_gram(texts)
    out: dict[str, Any] = {
        "distinct_1": distinct_n(texts, 1),
        "distinct_2": distinct_n(texts, 2),
        "distinct_3": distinct_n(texts, 3),
        "self_bleu": self_bleu(texts, self_bleu_sample, seed),
        "lexical_diversity": 1 - lex.mean_pairwise_cosine(),
        "vendi_lexical": lex.vendi(),
        **duplicate_rates(texts),
    }
    if embedder is not None:
        emb = embedder.gram(texts)
        out["embedding_diversity"] = 1 - emb.mean_pairwise_cosine()
        out["vendi_embedding"] = emb.vendi()
    return out
