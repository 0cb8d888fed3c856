"""Keyword coverage over 1,000,000 prompts x 1,000 values in one pass, against the memory-
bandwidth floor: a plain str.lower() pass over the same texts. Prompts are the released AART
prompts cycled; values are frequent words and bigrams of that text (so matches are dense)."""

from __future__ import annotations

import csv
import sys
import time
from collections import Counter
from pathlib import Path

from aart.evaluate.keywords import KeywordMatcher
from aart.recipe import Value

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
CSV = (
    Path(__file__).resolve().parents[2] / "shared" / "datasets" / "aart-v1" / "aart-v1-20231117.csv"
)


def main() -> None:
    with CSV.open(encoding="utf-8") as f:
        base = [r["prompt"] for r in csv.DictReader(f)]
    texts = [base[i % len(base)] for i in range(N)]
    words = Counter(w for t in base for w in t.lower().split() if w.isalpha() and len(w) > 3)
    bigrams = Counter(
        " ".join(p)
        for t in base
        for p in zip(t.lower().split(), t.lower().split()[1:], strict=False)
        if all(x.isalpha() for x in p)
    )
    values = [w for w, _ in words.most_common(700)] + [b for b, _ in bigrams.most_common(300)]
    axes = {f"axis{i}": [Value(value=v) for v in values[i * 250 : (i + 1) * 250]] for i in range(4)}
    t = time.perf_counter()
    matcher = KeywordMatcher(axes)
    build = time.perf_counter() - t

    t = time.perf_counter()
    for s in texts:
        s.lower()
    floor = time.perf_counter() - t

    t = time.perf_counter()
    n, counts, _ = matcher.count(texts)
    elapsed = time.perf_counter() - t
    mentions = sum(map(sum, counts))
    print(
        f"coverage: {n:,} prompts x {len(values)} values ({matcher.patterns:,} patterns with "
        f"inflections) in {elapsed:.1f}s = {n / elapsed:,.0f} prompts/s; {mentions:,} value mentions; "
        f"automaton built in {build:.2f}s"
    )
    print(
        f"str.lower() pass: {floor:.2f}s = {n / floor:,.0f} prompts/s; "
        f"coverage / lower-pass throughput ratio {floor / elapsed:.3f}"
    )


if __name__ == "__main__":
    main()
