"""The values never attacked: per axis, the values of the run (or the recipe) that no
attacked prompt had, and apart those the scope's filters took out on purpose."""

from __future__ import annotations

from pathlib import Path


def untested(
    attacked: dict[str, set[str]], ds: Path, recipe: str | Path | None
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per axis, the values of the run's dimension files (for a dataset inside a run) or the
    recipe's explicit values that no attacked prompt had (``attacked``: per axis, the values
    of the prompts sent, judged or not); and apart, those of them the scope's filters took
    out on purpose."""
    from ..recipe.filters import apply_filter
    from ..store.rundir import Run, recipe_at

    values: dict[str, list[str]] = {}
    kept: dict[str, set[str]] = {}
    if (ds.parent / "run.db").exists() and (ds.parent / "recipe.yaml").exists():
        with Run.open(ds.parent, lock=False) as r:
            s = r.recipe.scope
            for name in r.recipe.dimensions:
                if r.dimension_path(name).exists():
                    every = r.read_dimension(name)
                    values[name] = [v.value for v in every]
                    f = s.filters.get(name)
                    if f is not None:
                        kept[name] = {v.value for v in apply_filter(every, f, s.seed)}
    elif recipe is not None:
        rec = recipe_at(recipe).recipe
        values = {n: [v.value for v in d.values] for n, d in rec.dimensions.items() if d.values}
        for n, d in rec.dimensions.items():
            if d.values and n in rec.scope.filters:
                scoped = apply_filter(list(d.values), rec.scope.filters[n], rec.scope.seed)
                kept[n] = {v.value for v in scoped}
    out: dict[str, list[str]] = {}
    filtered: dict[str, list[str]] = {}
    for axis, vals in values.items():
        seen = attacked.get(axis, set())
        missing = [v for v in vals if v not in seen]
        dropped = [v for v in missing if axis in kept and v not in kept[axis]]
        if dropped:
            filtered[axis] = dropped
        missing = [v for v in missing if v not in dropped]
        if missing:
            out[axis] = missing
    return out, filtered
