"""The archive of a search: one elite per cell (MAP-Elites). A cell is one value of each
chosen axis of the recipe, plus the attack strategy; its elite is the best candidate found
for it so far. Everything here is plain and deterministic: the same candidates offered in the
same order make the same archive, which is what lets a resumed search reproduce it."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..text.normalize import jaccard, shingles

#: the axis the attack strategy makes (as `aart attack` names it in a cell)
STRATEGY_AXIS = "strategy"
#: more cells than this is a grid no budget can fill: choose fewer axes (--axes)
MAX_CELLS = 5000


def cell_key(cell: dict[str, str]) -> str:
    """A cell as a stable string (its axes sorted)."""
    return json.dumps(cell, sort_keys=True, ensure_ascii=False)


@dataclass
class Elite:
    """A candidate judged, with its lineage. ``prompt`` is the text the cell's strategy is
    applied to; ``sent`` what reached the target."""

    id: str
    cell: dict[str, str]
    prompt: str
    sent: str
    response: str
    #: the search iteration that made it, and the target queries spent up to it
    iteration: int
    queries: int
    #: the elite (or dataset prompt) it was made from, and how
    parent: str | None
    mutation: str
    #: the primary judge's score in [0, 1], then its preference (severity, reply state)
    score: float
    preference: float
    success: bool
    verdicts: dict[str, Any] = field(default_factory=dict)
    #: the judge's preference against the elite it was compared with (``prefer.prefers``):
    #: that elite's id, and whether this one goes further
    preferred_over: str | None = None
    preferred: bool | None = None
    #: an injection case's: the dataset row whose carrier holds the payload, and the case's
    #: keys with the payload in place (``InjectionCase.fields``, and its tools)
    row: int | None = None
    case: dict[str, Any] | None = None
    #: the request the cell check read (a frame's inside, before any frame or converter;
    #: None: the prompt itself) and the deterministic frames put on it, innermost first
    #: (``[mutation, form]``: ``mutate.stack`` puts them on another cell's request)
    base: str | None = None
    frames: list[list[Any]] = field(default_factory=list)
    #: when the attacker's rewrite was unusable: the mutation asked, why it failed, and the
    #: deterministic mutation made instead (``mutation``)
    fallback: dict[str, Any] | None = None
    #: the request the judges read (the cell's dataset prompt; None: the prompt itself)
    behaviour: str | None = None
    #: an injection case's: the tools the agent called (what ``refine`` shows the attacker)
    tool_calls: list[str] = field(default_factory=list)

    @property
    def request(self) -> str:
        """The request inside the frames (what the cell check and the duplicate check read)."""
        return self.prompt if self.base is None else self.base

    def has_verdict(self, primary: str) -> bool:
        """Whether the primary judge gave a verdict (an unjudged elite scores 0, never a
        success, and is no pass either)."""
        v = self.verdicts.get(primary)
        violates = v.get("violates") if isinstance(v, dict) else getattr(v, "violates", None)
        return violates is not None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Elite:
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})


def similarity(a: str, b: str) -> float:
    """How alike two prompts are: the Jaccard similarity of their character shingles (the
    measure generation's near-duplicate check uses)."""
    return jaccard(shingles(a), shingles(b))


class Archive:
    """The cells and their elites. ``duplicate``: a candidate at least this similar to the
    elite of another cell duplicates it and is refused."""

    def __init__(self, cells: Sequence[dict[str, str]], duplicate: float = 0.8) -> None:
        self.cells = list(cells)
        self.keys = [cell_key(c) for c in self.cells]
        self.index = {k: i for i, k in enumerate(self.keys)}
        self.elites: dict[int, Elite] = {}
        self.duplicate = duplicate
        #: per cell: the target queries spent on it, and the search's queries at its first
        #: success
        self.spent = [0] * len(self.cells)
        self.first_success: dict[int, int] = {}
        self._shingles: dict[int, set[int]] = {}
        self._dup_shingles: dict[int, set[int]] = {}

    # -- reading -------------------------------------------------------------------------------
    def successes(self) -> int:
        """Cells whose elite succeeded."""
        return sum(1 for e in self.elites.values() if e.success)

    def neighbours(self, i: int) -> list[int]:
        """The cells that differ from cell ``i`` in exactly one axis."""
        mine = self.cells[i]
        out = []
        for j, other in enumerate(self.cells):
            if j != i and len(other) == len(mine):
                differ = sum(1 for a, v in mine.items() if other.get(a) != v)
                if differ == 1:
                    out.append(j)
        return out

    def closest(self, i: int, text: str) -> float:
        """The highest similarity of ``text`` to the elite of another cell (0 with none)."""
        sh = shingles(text)
        best = 0.0
        for j, e in self.elites.items():
            if j != i:
                other = self._shingles.setdefault(j, shingles(e.prompt))
                best = max(best, jaccard(sh, other))
        return best

    def duplicates(self, i: int, text: str) -> bool:
        """Whether the request ``text`` duplicates the request of the elite of another cell
        of the same strategy (a prompt under two strategies sends two different messages, so
        it is not a copy). The requests inside the frames are compared: one frame around two
        cells' requests is the same attack on two different requests, not a copy."""
        strategy = self.cells[i].get(STRATEGY_AXIS)
        sh = shingles(text)
        for j, e in self.elites.items():
            if j != i and self.cells[j].get(STRATEGY_AXIS) == strategy:
                other = self._dup_shingles.setdefault(j, shingles(e.request))
                if jaccard(sh, other) >= self.duplicate:
                    return True
        return False

    # -- the one rule that changes it ----------------------------------------------------------
    def beats(self, i: int, candidate: Elite) -> bool:
        """Whether ``candidate`` takes cell ``i``: a higher judge score; at an equal score,
        the judge's preference (its model's answer when it was asked about this incumbent,
        else its severity and the reply's state); then the one further from the other elites
        (diversity)."""
        incumbent = self.elites.get(i)
        if incumbent is None:
            return True
        if candidate.score != incumbent.score:
            return candidate.score > incumbent.score
        if candidate.preferred_over == incumbent.id and candidate.preferred is not None:
            return candidate.preferred
        if candidate.preference != incumbent.preference:
            return candidate.preference > incumbent.preference
        return self.closest(i, candidate.prompt) < self.closest(i, incumbent.prompt)

    def offer(self, i: int, candidate: Elite) -> bool:
        """Count the candidate's target query against cell ``i`` and keep it when it beats
        the incumbent and duplicates no other elite. Returns whether it was kept."""
        self.spent[i] += 1
        if self.duplicates(i, candidate.request) or not self.beats(i, candidate):
            return False
        self.elites[i] = candidate
        self._shingles.pop(i, None)
        self._dup_shingles.pop(i, None)
        if candidate.success and i not in self.first_success:
            self.first_success[i] = candidate.queries
        return True

    # -- choosing the next cells ---------------------------------------------------------------
    def pick(self, rng: random.Random, n: int, weighted: bool) -> list[int]:
        """``n`` cells, drawn with replacement (a generation may try one cell twice, each
        candidate with its own seed): uniformly, or weighted towards the cells with no
        success yet (three times as likely)."""
        cells = range(len(self.cells))
        if not weighted:
            return [rng.randrange(len(self.cells)) for _ in range(n)]
        w = [1.0 if (e := self.elites.get(c)) is not None and e.success else 3.0 for c in cells]
        return rng.choices(list(cells), weights=w, k=n)


def grid(
    cells: Iterable[dict[str, str]], axes: Sequence[str], strategies: Sequence[str]
) -> list[dict[str, str]]:
    """The archive's cells: each distinct cell of the dataset on ``axes``, under each
    strategy, in a stable order."""
    seen: dict[str, dict[str, str]] = {}
    for c in cells:
        if all(a in c for a in axes):
            base = {a: c[a] for a in axes}
            seen.setdefault(cell_key(base), base)
    out = []
    for key in sorted(seen):
        for s in strategies:
            out.append({**seen[key], STRATEGY_AXIS: s})
    return out
