"""Keyword coverage over 1,000,000 prompts x 1,000 values in one pass, against the memory-
bandwidth floor (a plain str.lower() pass over the same texts) and against the previous path
(pyahocorasick, one Python call per text and per match), whose counts must be identical.
Prompts are the released AART prompts cycled; values are frequent words and bigrams of that
text (so matches are dense)."""

from __future__ import annotations

import csv
import sys
import time
from collections import Counter
from pathlib import Path

import ahocorasick
import polars as pl

from aart.evaluate.keywords import BATCH, KeywordMatcher, inflections, normalize_for_match
from aart.recipe import Value

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
CSV = (
    Path(__file__).resolve().parents[2] / "shared" / "datasets" / "aart-v1" / "aart-v1-20231117.csv"
)


def previous_count(axes: dict[str, list[Value]], texts: list[str]) -> list[list[int]]:
    """The matcher aart used before: pyahocorasick's automaton, iterated in Python."""
    auto = ahocorasick.Automaton()
    table: dict[str, set[tuple[int, int]]] = {}
    for ai, vals in enumerate(axes.values()):
        for vi, v in enumerate(vals):
            for form in inflections(v.value):
                table.setdefault(f" {form} ", set()).add((ai, vi))
    for pattern, targets in table.items():
        auto.add_word(pattern, tuple(targets))
    auto.make_automaton()
    counts = [[0] * len(vals) for vals in axes.values()]
    for text in texts:
        found: set[tuple[int, int]] = set()
        for _, targets in auto.iter(normalize_for_match(text)):
            found.update(targets)
        for ai, vi in found:
            counts[ai][vi] += 1
    return counts


def measure(name: str, axes: dict[str, list[Value]], texts: list[str], floor: float) -> None:
    n_values = sum(map(len, axes.values()))
    matcher = KeywordMatcher(axes)
    t = time.perf_counter()
    n, counts, _ = matcher.count(texts)
    elapsed = time.perf_counter() - t
    column = pl.Series(texts)  # a column as read from Parquet: no Python strings
    t = time.perf_counter()
    col_counts = matcher.count(column.slice(i, BATCH) for i in range(0, n, BATCH))[1]
    from_column = time.perf_counter() - t
    t = time.perf_counter()
    old_counts = previous_count(axes, texts)
    old = time.perf_counter() - t
    print(
        f"{name}: {n:,} prompts x {n_values} values ({matcher.patterns:,} patterns), "
        f"{sum(map(sum, counts)):,} value mentions\n"
        f"  previous path (pyahocorasick, a Python call per text and match): {n / old:,.0f} prompts/s\n"
        f"  polars over Python strings: {n / elapsed:,.0f} prompts/s = {old / elapsed:.2f}x previous\n"
        f"  polars over a column: {n / from_column:,.0f} prompts/s = {old / from_column:.2f}x previous\n"
        f"  str.lower() pass / polars throughput: {floor / elapsed:.3f} (previous {floor / old:.3f})\n"
        f"  counts identical to previous: {old_counts == counts == col_counts}"
    )


def main() -> None:
    with CSV.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    base = [r["prompt"] for r in rows]
    texts = [base[i % len(base)] for i in range(N)]
    t = time.perf_counter()
    for s in texts:
        s.lower()
    floor = time.perf_counter() - t
    print(f"str.lower() pass: {N / floor:,.0f} prompts/s")

    # dense: 1,000 of the text's most frequent words and bigrams, ~17 mentions per prompt
    words = Counter(w for t in base for w in t.lower().split() if w.isalpha() and len(w) > 3)
    bigrams = Counter(
        " ".join(p)
        for t in base
        for p in zip(t.lower().split(), t.lower().split()[1:], strict=False)
        if all(x.isalpha() for x in p)
    )
    values = [w for w, _ in words.most_common(700)] + [b for b, _ in bigrams.most_common(300)]
    dense = {
        f"axis{i}": [Value(value=v) for v in values[i * 250 : (i + 1) * 250]] for i in range(4)
    }
    measure("dense", dense, texts, floor)

    # the released dataset's own value lists (what `aart evaluate` on it matches)
    crimes = sorted({r["crime"].strip() for r in rows if r["crime"].strip()})
    formats = sorted({u.strip() for r in rows for u in r["use_case"].split(",") if u.strip()})
    released = {
        "policy_concepts": [Value(value=v) for v in crimes],
        "task_formats": [Value(value=v) for v in formats],
    }
    measure("released value lists", released, texts, floor)


if __name__ == "__main__":
    main()
