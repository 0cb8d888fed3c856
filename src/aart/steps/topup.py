"""The paper's "rebalance and generate again" loop: find values the dataset under-covers and
append attempts for them to the blueprint, so `aart generate` fills only the gaps."""

from __future__ import annotations

import json
import math
import random
from typing import Any

from ..data.load import iter_records
from ..errors import UsageError
from ..evaluate.coverage import coverage
from ..store.rundir import Run
from ..types import Attempt
from .scope import make_attempt, scoped_values


def under_covered(
    counts: dict[str, int], n_prompts: int, min_count: int, min_share: float
) -> list[str]:
    floor = max(min_count, math.ceil(min_share * n_prompts))
    return sorted(v for v, c in counts.items() if c < floor)


def topup_run(
    run: Run,
    *,
    min_count: int = 1,
    min_share: float = 0.0,
    attempts_per_value: int = 1,
    axes: list[str] | None = None,
) -> dict[str, Any]:
    """Append top-up attempts to RUN/blueprint.jsonl (also written to RUN/topup.jsonl for
    review) and return what was under-covered."""
    path = run.path("dataset.jsonl")
    if not path.exists():
        raise UsageError(f"{path} is missing; run `aart generate {run.root}` first")
    texts = [r.prompt for r in iter_records(path)]
    values = scoped_values(run)
    cov = coverage(texts, values)
    s = run.recipe.scope
    rng = random.Random(s.seed + len(texts))
    blueprint = run.read_blueprint()
    # Running topup again before generating finds the same gaps and draws the same cells:
    # those attempts are in the blueprint already and are not appended twice.
    existing = {json.dumps([a.topup_for, a.cells], sort_keys=True) for a in blueprint}
    new: list[Attempt] = []
    pending = 0  # attempts for these gaps that an earlier topup appended, not generated yet
    gaps: dict[str, list[str]] = {}
    for axis in axes or list(values):
        if axis not in values:
            raise UsageError(f"unknown dimension {axis!r}; dimensions: {', '.join(values)}")
        gaps[axis] = under_covered(cov[axis]["counts"], len(texts), min_count, min_share)
        for v in gaps[axis]:
            for _ in range(attempts_per_value):
                # every cell holds the gap's value; the other axes vary from cell to cell
                cells = [
                    {a: v if a == axis else rng.choice(vals).value for a, vals in values.items()}
                    for _ in range(s.queries_per_attempt)
                ]
                if json.dumps([{axis: v}, cells], sort_keys=True) in existing:
                    pending += 1
                    continue
                index = len(blueprint) + len(new) + 1
                new.append(make_attempt(index, cells, topup_for={axis: v}))
    lines = "".join(json.dumps(a.to_line(), ensure_ascii=False) + "\n" for a in new)
    run.path("topup.jsonl").write_text(lines, encoding="utf-8")
    with run.path("blueprint.jsonl").open("a", encoding="utf-8") as f:
        f.write(lines)
    return {
        "prompts": len(texts),
        "gaps": gaps,
        "attempts_added": len(new),
        "attempts_pending": pending,
        "queries_added": len(new) * s.queries_per_attempt,
    }
