"""The recipe's scope filters applied to a dimension's values (keep/drop, regexes, a seeded
maximum): used by the run (:meth:`aart.store.rundir.Run.scoped_values`), the dry run and the
dataset check, so it lives with the recipe that defines them."""

from __future__ import annotations

import random

from ..text.normalize import fold
from .models import Filter, Value, compile_regex


def apply_filter(values: list[Value], f: Filter, seed: int) -> list[Value]:
    """The values ``f`` keeps. keep/drop compare case-insensitively (explicit values keep
    their case, enumerated ones are lowercase); regexes search the value as written."""
    keep = {fold(k) for k in f.keep}
    drop = {fold(d) for d in f.drop}
    # RE2, not re: a shared recipe's regex must not backtrack for hours
    keep_re = [compile_regex(p) for p in f.keep_regex]
    drop_re = [compile_regex(p) for p in f.drop_regex]
    out = [
        v
        for v in values
        if (not keep or fold(v.value) in keep)
        and fold(v.value) not in drop
        and (not keep_re or any(r.search(v.value) for r in keep_re))
        and not any(r.search(v.value) for r in drop_re)
    ]
    if f.max is not None and len(out) > f.max:
        # A seeded sample, not the first N: alphabetical order must not decide coverage.
        out = sorted(random.Random(seed).sample(out, f.max), key=lambda v: v.value)
    return out


def unmatched(values: list[Value], f: Filter) -> list[tuple[str, str]]:
    """The keep/drop entries of ``f`` that name none of ``values`` (a misspelling): as
    (key, entry). A keep entry that matches nothing quietly drops what it meant to keep."""
    known = {fold(v.value) for v in values}
    return [(key, e) for key in ("keep", "drop") for e in getattr(f, key) if fold(e) not in known]


__all__ = ["apply_filter", "unmatched"]
