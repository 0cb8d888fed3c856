"""Per-axis keyword coverage, annotation distributions and annotation agreement."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..recipe import Value
from .data import Dataset
from .keywords import KeywordMatcher
from .stats import evenness, top_share


def coverage(texts: Sequence[str], values: Mapping[str, Sequence[Value]]) -> dict[str, Any]:
    """Keyword coverage per axis, as in the paper (which notes it underestimates: keywords
    miss implicit mentions)."""
    matcher = KeywordMatcher(values)
    n, counts, any_hit = matcher.count(texts)
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
    c = Counter(x for x in labels if x)
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
    known = {v.value for v in values}
    extra = sorted({x for x in labels if x and x not in known})
    matcher = KeywordMatcher({"axis": [*values, *(Value(value=x) for x in extra)]})
    names = matcher.values["axis"]
    checked = agree = 0
    for text, label in zip(texts, labels, strict=True):
        if not label:
            continue
        checked += 1
        agree += (0, names.index(label)) in matcher.match(text)
    return {"checked": checked, "agree": agree, "rate": agree / checked if checked else 0.0}


def agreement(ds: Dataset, values: Mapping[str, Sequence[Value]]) -> dict[str, Any]:
    """Per dimension, keyword agreement of each prompt with its cell's value and with the value
    the model annotated. The paper's human review found 99.2% for policy concepts, 96.7% for
    regions and 85.0% for task formats."""
    out: dict[str, Any] = {}
    for axis in [*ds.cells, *(a for a in ds.annotations if a not in ds.cells)]:
        vals = list(values.get(axis, []))
        entry: dict[str, Any] = {}
        if axis in ds.cells:
            entry["cell"] = keyword_agreement(ds.texts, ds.cells[axis], vals)
        if axis in ds.annotations:
            entry["annotation"] = keyword_agreement(ds.texts, ds.annotations[axis], vals)
        if axis in ds.cells and axis in ds.annotations:
            pairs = [
                (c, a) for c, a in zip(ds.cells[axis], ds.annotations[axis], strict=True) if c and a
            ]
            same = sum(c == a for c, a in pairs)
            entry["annotation_matches_cell"] = {
                "checked": len(pairs),
                "agree": same,
                "rate": same / len(pairs) if pairs else 0.0,
            }
        # the headline figure: against the cell where there is one
        entry.update(entry.get("cell") or entry["annotation"])
        out[axis] = entry
    return out
