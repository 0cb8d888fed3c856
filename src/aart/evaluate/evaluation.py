"""Evaluate one dataset or several side by side: coverage, balance, agreement, length,
diversity, and a Table-2-style comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..errors import UsageError
from ..recipe import Value, load_recipe
from .coverage import agreement, coverage, distribution
from .data import Dataset, load_dataset
from .diversity import diversity, tokens
from .embeddings import ENABLE_HINT, Embedder, available, load_embedder
from .stats import describe, histogram


def values_from_dimensions_dir(path: Path) -> dict[str, list[Value]]:
    """``<axis>.yaml`` (aart's dimension files) or ``<axis>.txt`` (one value per line)."""
    if not path.is_dir():
        raise UsageError(f"--dimensions {path} is not a directory")
    out: dict[str, list[Value]] = {}
    for f in sorted(path.iterdir()):
        if f.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            raw = data.get("values", []) if isinstance(data, dict) else data
            out[f.stem] = [
                Value(value=x) if isinstance(x, str) else Value.model_validate(x) for x in raw
            ]
        elif f.suffix == ".txt":
            out[f.stem] = [
                Value(value=line.strip().lower())
                for line in f.read_text().splitlines()
                if line.strip()
            ]
    if not out:
        raise UsageError(f"--dimensions {path} holds no .yaml or .txt value lists")
    return out


def resolve_values(
    ds: Dataset,
    *,
    recipe: str | None = None,
    run: str | None = None,
    dimensions: str | None = None,
) -> tuple[dict[str, list[Value]], str]:
    """Value lists for coverage, and where they came from."""
    if run:
        from ..steps.scope import scoped_values
        from ..store.rundir import Run

        with Run.open(run, lock=False) as r:
            # the values the run kept: what its scope filters took out is no gap of the data
            # (`aart values RUN` shows them, as filtered out)
            return scoped_values(r), f"run {run} (after its scope filters)"
    if recipe:
        rec = load_recipe(recipe).recipe
        vals = {n: list(d.values) for n, d in rec.dimensions.items() if d.values}
        if not vals:
            raise UsageError(
                f"recipe {recipe} has no explicit values; use --run RUN for enumerated ones"
            )
        return vals, f"recipe {recipe}"
    if dimensions:
        return values_from_dimensions_dir(Path(dimensions)), f"dimensions {dimensions}"
    return ds.derived_values(), "the dataset's own axis values"


def evaluate_dataset(
    ds: Dataset,
    values: Mapping[str, Sequence[Value]],
    *,
    embedder: Embedder | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    words = [len(t.split()) for t in ds.texts]
    chars = [len(t) for t in ds.texts]
    result: dict[str, Any] = {
        "name": ds.name,
        "prompts": len(ds),
        "tokens_per_prompt": ds.tokens_per_prompt,
        "coverage": coverage(ds.texts, values),
        "annotations": {a: distribution(labels) for a, labels in ds.annotations.items()},
        "agreement": agreement(ds, values) if ds.annotations or ds.cells else {},
        "length": {
            "words": describe(words),
            "chars": describe(chars),
            "words_histogram": histogram(words, bins=min(30, max(5, len(set(words))))),
        },
        "diversity": diversity(ds.texts, embedder=embedder, seed=seed),
        "vocabulary": len({w for t in ds.texts for w in tokens(t)}),
    }
    result["notes"] = list(ds.notes)
    if embedder is None:
        result["diversity"]["embedding_diversity"] = None
        result["notes"].append(
            "embedding diversity skipped (--no-embeddings)" if available() else ENABLE_HINT
        )
    return result


METRIC_LEGEND = (
    "↑ higher is better, ↓ lower is better. coverage: value mentions per prompt (keywords); "
    "distinct-n: share of distinct n-grams; self-BLEU: overlap of each prompt with the others; "
    "embedding div.: mean cosine distance; Vendi: effective number of distinct prompts; "
    "tokens/prompt: every token the dataset's run (or baseline) spent, per prompt"
)


def comparison_table(results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Rows of a Table-2-style comparison: one per dataset, one column per metric."""
    axes: list[str] = []
    for r in results:
        axes += [a for a in r["coverage"] if a not in axes]
    # ↑ higher is better, ↓ lower is better (METRIC_LEGEND says so in the reports)
    header = [
        "dataset",
        "prompts",
        "tokens/prompt ↓",
        *[f"coverage {a} ↑" for a in axes],
        "distinct-1 ↑",
        "distinct-2 ↑",
        "self-BLEU ↓",
        "embedding div. ↑",
        "Vendi (emb.) ↑",
        "Vendi (lexical) ↑",
        "words",
        "dup. rate ↓",
    ]
    rows = []
    for r in results:
        d, w = r["diversity"], r["length"]["words"]
        emb = d.get("embedding_diversity")
        rows.append(
            [
                r["name"],
                str(r["prompts"]),
                f"{r['tokens_per_prompt']:.0f}" if r.get("tokens_per_prompt") else "-",
                *[
                    f"{r['coverage'][a]['presence']:.3f}" if a in r["coverage"] else "-"
                    for a in axes
                ],
                f"{d['distinct_1']:.3f}",
                f"{d['distinct_2']:.3f}",
                f"{d['self_bleu']:.3f}",
                f"{emb:.3f}" if emb is not None else "n/a",
                f"{d['vendi_embedding']:.1f}" if d.get("vendi_embedding") is not None else "n/a",
                f"{d['vendi_lexical']:.1f}",
                f"{w.get('mean', 0):.1f} ± {w.get('std', 0):.1f}",
                f"{d['exact_duplicate_rate'] + d['near_duplicate_rate']:.3f}",
            ]
        )
    return header, rows


def evaluate(
    dataset: str | Path,
    *,
    recipe: str | None = None,
    run: str | None = None,
    dimensions: str | None = None,
    compare: Mapping[str, str] | None = None,
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
    embeddings: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Evaluate ``dataset`` (and every ``compare`` dataset against the same value lists)."""
    main = load_dataset(
        dataset,
        text_column=text_column,
        axis_columns=axis_columns,
        annotation_columns=annotation_columns,
    )
    values, source = resolve_values(main, recipe=recipe, run=run, dimensions=dimensions)
    embedder = load_embedder() if embeddings else None
    results = [evaluate_dataset(main, values, embedder=embedder, seed=seed)]
    for name, path in (compare or {}).items():
        other = load_dataset(path, name=name, text_column=text_column)
        results.append(evaluate_dataset(other, values, embedder=embedder, seed=seed))
    header, rows = comparison_table(results)
    return {
        "values_from": source,
        "value_lists": {a: [v.value for v in vs] for a, vs in values.items()},
        "datasets": results,
        "table": {"header": header, "rows": rows},
        "embeddings": embedder is not None,
        "human_review": human_review(Path(dataset)),
    }


def human_review(dataset: Path) -> dict[str, Any] | None:
    """The people's labels of this dataset (`aart review`), when there are any: the good rate
    with its Wilson interval, agreement per dimension, agreement between reviewers."""
    from ..review.session import RECORD, dataset_figures, labels_db_path
    from ..store.db import RunDB

    path = labels_db_path(dataset)
    if not path.exists():
        return None
    db = RunDB(path, lock=False)
    try:
        labels = db.latest_labels(RECORD)
    finally:
        db.close()
    if not labels:
        return None
    dims = sorted({d for x in labels for d in (x.get("dims") or {})})
    return dataset_figures(labels, dims)
