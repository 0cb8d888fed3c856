"""Step 2 again after the dimension files (or the recipe's filters) changed: rebuild only the
cells the change affects, so the rest of the blueprint, its hand edits and the prompts already
generated for it stand.

- a value taken out of an axis: its cells get another value of that axis (a new value of the
  same edit first, so a renamed value keeps its cells); under `per-value`, the attempts of a
  primary value taken out are dropped, as a fresh build would not plan them;
- a value added to an axis: under `per-value`, a new primary value gets its attempts; on any
  other axis it takes over cells of the most used values until it has its share.

The blueprint keeps the attempt ids: the generator keeps every record whose cell still stands
at its place and asks again only for the changed cells.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field

from ..recipe import Recipe
from ..types import Attempt, attempt_values
from . import mix
from .scope import few_values, make_attempt

#: run.db meta key: per axis, the scoped values the blueprint was last built from
BUILT_FROM = "blueprint_values"


@dataclass
class Rescoped:
    """What a rebuild did, per axis."""

    removed: dict[str, list[str]] = field(default_factory=dict)
    added: dict[str, list[str]] = field(default_factory=dict)
    cells_changed: int = 0
    attempts_added: int = 0
    attempts_dropped: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.added)

    def note(self, root: str) -> str:
        parts = []
        for axis in sorted({*self.removed, *self.added}):
            what = []
            if self.removed.get(axis):
                what.append(f"{few_values(self.removed[axis])} taken out")
            if self.added.get(axis):
                what.append(f"{few_values(self.added[axis])} added")
            parts.append(f"{axis}: " + ", ".join(what))
        done = [f"{self.cells_changed} cells rebuilt"]
        if self.attempts_added:
            done.append(f"{self.attempts_added} attempts added")
        if self.attempts_dropped:
            done.append(f"{self.attempts_dropped} attempts dropped")
        return (
            "the dimensions changed since the blueprint was built ("
            + "; ".join(parts)
            + "): "
            + ", ".join(done)
            + "; the other cells, your edits and their prompts are kept "
            + f"(`aart scope {root} --force` rebuilds the whole blueprint)"
        )


def built_from(meta: str | None) -> dict[str, list[str]] | None:
    if not meta:
        return None
    try:
        data = json.loads(meta)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def rescope(
    recipe: Recipe,
    blueprint: list[Attempt],
    values: dict[str, list[str]],
    built: dict[str, list[str]] | None,
) -> tuple[list[Attempt], Rescoped]:
    """The blueprint with the cells that ``values`` (the scoped values now) no longer match
    rebuilt, and what was done. ``built`` is what the blueprint was built from (None for a
    run older than that record: then the values its cells use that are gone count as taken
    out, and nothing counts as added)."""
    used: dict[str, set[str]] = {}
    for attempt in blueprint:
        for cell in attempt.cells:
            for axis, v in cell.items():
                used.setdefault(axis, set()).add(v)
    done = Rescoped()
    for axis, now in values.items():
        current = set(now)
        if built is not None and axis in built:
            gone = [v for v in built[axis] if v not in current and v in used.get(axis, set())]
            new = [v for v in now if v not in set(built[axis])]
        else:
            gone = sorted(used.get(axis, set()) - current)
            new = []
        if gone:
            done.removed[axis] = gone
        if new:
            done.added[axis] = new
    if not done.changed:
        return blueprint, done
    s = recipe.scope
    rng = random.Random(s.seed + 1)
    primary = s.primary if s.mix == "per-value" else None
    # edited as lines (copies), made attempts again at the end
    out = [dict(a.to_line(), cells=[dict(c) for c in a.cells]) for a in blueprint]
    changed: set[tuple[int, int]] = set()

    def fits(cell: dict[str, str], axis: str, pool: list[str]) -> list[str]:
        if primary is None:
            return list(pool)
        return mix.allowed(s.restrict, cell.get(primary, ""), axis, pool)

    # values taken out: a primary value's attempts go; elsewhere the cells get another value
    if primary in done.removed:
        dropped = set(done.removed[primary])
        if primary in done.added:  # a rename: the new values take the old ones' attempts
            renamed = dict(zip(done.removed[primary], done.added[primary], strict=False))
        else:
            renamed = {}
        kept = []
        for a in out:
            first = a["cells"][0].get(primary)
            if first in dropped and first not in renamed:
                done.attempts_dropped += 1
                continue
            kept.append(a)
        out = kept
        for ai, a in enumerate(out):
            for ci, cell in enumerate(a["cells"]):
                if cell.get(primary) in renamed:
                    cell[primary] = renamed[cell[primary]]
                    changed.add((ai, ci))
        done.added[primary] = [v for v in done.added.get(primary, []) if v not in renamed.values()]
        if not done.added[primary]:
            del done.added[primary]
    for axis, gone_list in done.removed.items():
        if axis == primary:
            continue
        lost = set(gone_list)
        fresh = list(done.added.get(axis, []))
        taken: Counter[str] = Counter()
        for ai, a in enumerate(out):
            for ci, cell in enumerate(a["cells"]):
                if cell.get(axis) in lost:
                    # the new values first (a rename keeps its cells), then any value the
                    # cell's primary value allows (scope.restrict)
                    # (scope.check_restrict has made sure the allowed values are there)
                    pool = fits(cell, axis, fresh) or fits(cell, axis, values[axis])
                    cell[axis] = min(pool, key=lambda v: (taken[v], rng.random()))
                    taken[cell[axis]] += 1
                    changed.add((ai, ci))

    # values added: a new primary value gets its attempts; elsewhere it takes over cells
    if primary in done.added:
        others = {k: v for k, v in values.items() if k != primary}
        ordered = {primary: done.added[primary], **others}
        for cells in mix.per_value(
            ordered,
            primary,
            s.attempts_per_value,
            s.sample,
            s.weights,
            s.seed + len(blueprint),
            s.queries_per_attempt,
            s.restrict,
        ):
            cells = [{axis: c[axis] for axis in values} for c in cells]
            done.attempts_added += 1
            out.append(make_attempt(len(blueprint) + done.attempts_added, cells).to_line())
    for axis, new in done.added.items():
        if axis == primary:
            continue
        counts: Counter[str] = Counter(
            c[axis] for a in out for c in a["cells"] if c.get(axis) in set(values[axis])
        )
        share = sum(counts.values()) // max(1, len(values[axis]))
        for v in new:
            need = share - counts[v]
            spots = [
                (ai, ci)
                for ai, a in enumerate(out)
                for ci, c in enumerate(a["cells"])
                if c.get(axis) in counts and c[axis] not in new
            ]
            rng.shuffle(spots)
            # take from the most used values first, never below the share
            spots.sort(key=lambda p: -counts[out[p[0]]["cells"][p[1]][axis]])
            for ai, ci in spots:
                if need <= 0:
                    break
                cell = out[ai]["cells"][ci]
                if counts[cell[axis]] <= share or not fits(cell, axis, [v]):
                    continue
                counts[cell[axis]] -= 1
                cell[axis] = v
                counts[v] += 1
                need -= 1
                changed.add((ai, ci))
    for a in out:
        a["values"] = attempt_values(a["cells"])
        a["queries"] = len(a["cells"])
    done.cells_changed = len({p for p in changed if p[0] < len(out)})
    return [Attempt.model_validate(a) for a in out], done
