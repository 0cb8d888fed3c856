"""One view, per value of every dimension, of where it went: planned (cells of the
blueprint), generated (prompts kept for those cells), mentioned (keyword matches in the
dataset) and attacked (prompts of an attack). A value that did not get there says why:
filtered out by the recipe's scope filters, never planned by the mix, or planned but missing
from the dataset."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..data.load import iter_records
from ..evaluate.coverage import coverage
from ..store.rundir import Run
from .scope import scoped_values

FILTERED_OUT = "filtered out"
NEVER_PLANNED = "never planned"
MISSING = "planned but missing"
OK = "ok"


def attacked_unit(summary: dict[str, Any]) -> str:
    """What the attack's per-value counts count: judged prompts, or, with strategies, judged
    (prompt, strategy) pairs (a prompt counts once per strategy)."""
    strategies = [c["value"] for c in summary.get("by_value", {}).get("strategy", [])]
    if len(strategies) > 1:
        return f"judged prompt x strategy pairs ({len(strategies)} strategies)"
    return "judged prompts"


def value_view(run: Run, attack_dir: str | Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """Per dimension, one row per value of its dimension file: value, status, planned,
    generated, mentioned, attacked (None without an attack) and what `attacked` counts
    (``attacked_unit``: judged prompts, or judged prompt x strategy pairs)."""
    dims = run.recipe.dimensions
    every = {name: run.read_dimension(name) for name in dims}
    scoped = {name: {v.value for v in vs} for name, vs in scoped_values(run).items()}
    planned: dict[str, Counter[str]] = {name: Counter() for name in dims}
    if run.path("blueprint.jsonl").exists():
        for a in run.read_blueprint():
            for cell in a.cells:
                for axis, value in cell.items():
                    planned.setdefault(axis, Counter())[value] += 1
    generated: dict[str, Counter[str]] = {name: Counter() for name in dims}
    texts: list[str] = []
    if run.path("dataset.jsonl").exists():
        for r in iter_records(run.path("dataset.jsonl")):
            texts.append(r.prompt)
            for axis, value in r.cell.items():
                generated.setdefault(axis, Counter())[value] += 1
    mentioned = coverage(texts, every) if texts else {}
    attacked: dict[str, dict[str, int]] | None = None
    unit = None
    if attack_dir is not None:
        summary = json.loads((Path(attack_dir) / "attack.json").read_text(encoding="utf-8"))
        attacked = {
            axis: {c["value"]: c["n"] for c in cells} for axis, cells in summary["by_value"].items()
        }
        unit = attacked_unit(summary)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, values in every.items():
        rows = []
        for v in values:
            p, g = planned[name][v.value], generated[name][v.value]
            if v.value not in scoped[name]:
                status = FILTERED_OUT
            elif not p:
                status = NEVER_PLANNED
            elif not g:
                status = MISSING
            else:
                status = OK
            rows.append(
                {
                    "value": v.value,
                    "status": status,
                    "planned": p,
                    "generated": g,
                    "mentioned": mentioned.get(name, {}).get("counts", {}).get(v.value, 0),
                    "attacked": None
                    if attacked is None
                    else attacked.get(name, {}).get(v.value, 0),
                    "attacked_unit": unit,
                }
            )
        out[name] = rows
    return out
