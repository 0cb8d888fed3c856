"""Per-axis keyword coverage, annotation distributions and annotation agreement."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.load import Dataset
from ..recipe import Value
from ..text.keywords import KeywordMatcher, Texts
from .stats import evenness, top_share


def coverage(texts: Sequence[str], values: Mapping[str, Sequence[Value]]) -> dict[str, Any]:
    """Keyword coverage per axis, as in the paper (which notes it underestimates: keywords
    miss implicit mentions)."""
    matcher = KeywordMatcher(values)
    return coverage_from_counts(matcher, *matcher.count(texts))


def coverage_from_counts(
    matcher: KeywordMatcher, n: int, counts: list[list[int]], any_hit: list[int]
) -> dict[str, Any]:
    """:func:`coverage` from the counts of :meth:`KeywordMatcher.count` (summed over the
    chunks of a dataset)."""
    out: dict[str, Any] = {}
    for ai, axis in enumerate(matcher.axes):
        c = counts[ai]
        names = matcher.values[axis]
        mentions = sum(c)
        out[axis] = {
            "values": len(names),
            "presence": mentions / n if n else 0.0,  # value mentions per prompt
            "prompt_share": any_hit[ai] / n if n else 0.0,
            "mentions": mentions,
            "counts": dict(sorted(zip(names, c, strict=True), key=lambda kv: (-kv[1], kv[0]))),
            "never_matched": sorted(v for v, k in zip(names, c, strict=True) if k == 0),
            "matched_once": sorted(v for v, k in zip(names, c, strict=True) if k == 1),
            "top5_share": top_share(c),
            "evenness": evenness(c),
        }
    return out


def distribution(labels: Sequence[str | None]) -> dict[str, Any]:
    """How a categorical column (e.g. the annotated task format) is spread."""
    return distribution_from_counts(Counter(x for x in labels if x))


def distribution_from_counts(c: Counter[str]) -> dict[str, Any]:
    total = sum(c.values())
    top = c.most_common(5)
    return {
        "records": total,
        "distinct": len(c),
        "counts": dict(c.most_common()),
        "top": [{"value": v, "count": k, "share": k / total} for v, k in top] if total else [],
        "singletons": sorted(v for v, k in c.items() if k == 1),
        "top5_share": top_share(list(c.values())),
        "evenness": evenness(list(c.values())),
    }


def keyword_agreement(
    texts: Sequence[str], labels: Sequence[str | None], values: Sequence[Value]
) -> dict[str, Any]:
    """How often a record's value (its cell's, or the one the model annotated) appears in its
    prompt: keyword match with aliases and inflections."""
    return _rate(*agreement_counts(texts, labels, values))


def agreement_counts(
    texts: Texts, labels: Sequence[str | None], values: Sequence[Value]
) -> tuple[int, int]:
    """(records with a label, records whose prompt mentions it). A label outside ``values``
    is matched as a value of its own."""
    known = {v.value for v in values}
    extra = sorted({x for x in labels if x and x not in known})
    matcher = KeywordMatcher({"axis": [*values, *(Value(value=x) for x in extra)]})
    index: dict[str, int] = {}
    for i, name in enumerate(matcher.values["axis"]):
        index.setdefault(name, i)
    wanted = [index[label] if label else None for label in labels]
    mentioned = matcher.mentions(texts, wanted)
    return sum(w is not None for w in wanted), int(mentioned.sum())


def _rate(checked: int, agree: int) -> dict[str, Any]:
    return {"checked": checked, "agree": agree, "rate": agree / checked if checked else 0.0}


class AgreementCounts:
    """Per dimension, keyword agreement of each prompt with its cell's value and with the value
    the model annotated, summed over the chunks of a dataset. The paper's human review found
    99.2% for policy concepts, 96.7% for regions and 85.0% for task formats."""

    def __init__(self, values: Mapping[str, Sequence[Value]]) -> None:
        self.values = values
        self.counts: dict[str, dict[str, list[int]]] = {}

    def add(self, ds: Dataset, column: Texts | None = None) -> None:
        """Add a chunk (``column``: its texts as a polars column, when the caller has it)."""
        texts = ds.texts if column is None else column
        for axis in [*ds.cells, *(a for a in ds.annotations if a not in ds.cells)]:
            vals = list(self.values.get(axis, []))
            entry = self.counts.setdefault(axis, {})
            for source, labelled in (("cell", ds.cells), ("annotation", ds.annotations)):
                if axis in labelled:
                    checked, agree = agreement_counts(texts, labelled[axis], vals)
                    total = entry.setdefault(source, [0, 0])
                    total[0] += checked
                    total[1] += agree
            if axis in ds.cells and axis in ds.annotations:
                pairs = [
                    (c, a)
                    for c, a in zip(ds.cells[axis], ds.annotations[axis], strict=True)
                    if c and a
                ]
                total = entry.setdefault("annotation_matches_cell", [0, 0])
                total[0] += len(pairs)
                total[1] += sum(c == a for c, a in pairs)

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for axis, entry in self.counts.items():
            item: dict[str, Any] = {k: _rate(*v) for k, v in entry.items()}
            # the headline figure: against the cell where there is one
            item.update(item.get("cell") or item["annotation"])
            out[axis] = item
        return out


def agreement(ds: Dataset, values: Mapping[str, Sequence[Value]]) -> dict[str, Any]:
    counts = AgreementCounts(values)
    counts.add(ds)
    return counts.result()
