"""What an export starts from: a dataset file or a run directory, read into typed records plus
what a dataset card says about them (recipe, axes and values, coverage, provenance)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..injection import case_keys

log = logging.getLogger("aart")

#: an imported record's keys that say where it comes from (see ExportRecord.origin)
ORIGIN_KEYS = ("source", "injection_vectors")


@dataclass
class ExportRecord:
    """One prompt as every format carries it: its id, text, cell (one value per axis),
    annotated values and, for a regression set, the strategy it replays."""

    id: str
    prompt: str
    cell: dict[str, str]
    annotations: dict[str, str] = field(default_factory=dict)
    strategy: str | None = None
    #: an injection case's keys (user_task, context, injection, success, utility: see
    #: aart.injection), empty for a plain prompt
    case: dict[str, Any] = field(default_factory=dict)
    #: where an imported record comes from (`aart import`: benchmark, licence, revision,
    #: url) and its injection vectors: carried by every format, so a shared export keeps
    #: the licence and notices its source asks for
    origin: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExportSource:
    name: str
    path: Path
    records: list[ExportRecord]
    #: every axis and the values it takes (the run's dimension files, else the records')
    axes: dict[str, list[str]] = field(default_factory=dict)
    recipe_name: str | None = None
    recipe_description: str = ""
    application: str = ""
    policy: str = ""
    languages: list[str] = field(default_factory=lambda: ["en"])
    #: coverage per axis from an `aart evaluate` report ({axis: {presence, prompt_share, ...}})
    coverage: dict[str, Any] = field(default_factory=dict)
    #: how the records were made: run ids, recipe hashes, models, seeds, times
    provenance: dict[str, Any] = field(default_factory=dict)
    #: the distinct sources of imported records (benchmark, licence, revision, url)
    sources: list[dict[str, Any]] = field(default_factory=list)

    def source_license(self) -> str | None:
        """The one licence every record's source names, as a Hugging Face identifier (MIT ->
        mit); None when the records name none or several."""
        names = {str(s.get("license") or "") for s in self.sources}
        if len(names) != 1 or "" in names or len(self.sources) == 0:
            return None
        return names.pop().lower()


def load_source(
    path: str | Path,
    evaluation: str | Path | None = None,
    *,
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
) -> ExportSource:
    """Read DATASET (a .jsonl/.csv/.parquet file, or a run directory holding dataset.jsonl);
    a table that is not aart's own names its prompt column (and axis and annotation
    columns) as `aart evaluate` reads them."""
    from ..data.foreign import is_hf_folder
    from ..data.load import load_dataset, read_rows

    path = Path(path)
    run_dir: Path | None = None
    if path.is_dir() and (path / "dataset.jsonl").exists():
        run_dir, dataset = path, path / "dataset.jsonl"
    elif path.is_dir() and not is_hf_folder(path):
        raise UsageError(
            f"{path} is a directory without dataset.jsonl; give a run directory, a dataset "
            "file or a Hugging Face dataset folder"
        )
    elif path.is_dir():
        dataset = path  # a Hugging Face folder (an earlier export)
    else:
        dataset = path
        if (path.parent / "recipe.yaml").exists() and (path.parent / "dimensions").is_dir():
            run_dir = path.parent  # RUN/dataset.jsonl: the run's dimension files name the values
    ds = load_dataset(
        dataset,
        text_column=text_column,
        axis_columns=axis_columns,
        annotation_columns=annotation_columns,
    )
    rows = read_rows(dataset)
    records = []
    for i, text in enumerate(ds.texts):
        row = rows[i] if i < len(rows) else {}
        annotations = {a: v[i] for a, v in ds.annotations.items() if v[i]}
        records.append(
            ExportRecord(
                id=str(row.get("id") or "") or f"p{i:06d}",
                prompt=text,
                cell=ds.cell_of(i),
                annotations={a: str(v) for a, v in annotations.items()},
                strategy=str(row["strategy"]) if row.get("strategy") else None,
                case=case_keys(row),
                origin={k: row[k] for k in ORIGIN_KEYS if row.get(k) not in (None, "", [])},
            )
        )
    src = ExportSource(name=ds.name, path=path, records=records)
    src.axes = {a: [v.value for v in vs] for a, vs in ds.derived_values().items()}
    src.provenance = _provenance(rows)
    src.sources = _sources(records)
    recipe_file = (run_dir or dataset.parent) / "recipe.yaml"
    if recipe_file.exists():
        _add_recipe(src, recipe_file, run_dir)
    report = Path(evaluation) if evaluation else _default_evaluation(run_dir or dataset.parent)
    if report is not None:
        src.coverage = _coverage(report)
    return src


def _add_recipe(src: ExportSource, recipe_file: Path, run_dir: Path | None) -> None:
    from ..store.rundir import recipe_at

    try:
        recipe = recipe_at(recipe_file).recipe
    except Exception as e:  # the card is still worth writing without the recipe
        log.warning("%s: not read for the dataset card (%s)", recipe_file, e)
        return
    src.recipe_name = recipe.name
    src.recipe_description = recipe.description
    src.application = recipe.application.name
    src.policy = recipe.application.policy
    src.languages = list(recipe.application.languages) or ["en"]
    if run_dir is None:
        return
    for axis in recipe.dimensions:
        values = _dimension_values(run_dir / "dimensions" / f"{axis}.yaml")
        if values:
            src.axes[axis] = values


def _dimension_values(path: Path) -> list[str]:
    import yaml

    if not path.exists():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    raw = data.get("values", []) if isinstance(data, dict) else data
    out = []
    for v in raw or []:
        value = v.get("value") if isinstance(v, dict) else v
        if isinstance(value, str) and value.strip():
            out.append(value.strip())
    return out


def _default_evaluation(folder: Path) -> Path | None:
    # where `aart evaluate DATASET --report RUN/evaluation` (as `make demo` does) writes it
    report = folder / "evaluation.json"
    return report if report.exists() else None


def _coverage(report: Path) -> dict[str, Any]:
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"{report}: not an `aart evaluate` JSON report ({e})") from None
    results = data.get("datasets") if isinstance(data, dict) else None
    first = results[0] if isinstance(results, list) and results else data
    coverage = first.get("coverage") if isinstance(first, dict) else None
    if not isinstance(coverage, dict):
        raise UsageError(f"{report}: no coverage figures; give the OUT.json of `aart evaluate`")
    keep = ("values", "presence", "prompt_share", "never_matched")
    return {
        a: {k: c[k] for k in keep if k in c} for a, c in coverage.items() if isinstance(c, dict)
    }


def _provenance(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A summary of the records' provenance: which runs, recipes and models made them."""
    seen: dict[str, set[str]] = {}
    times: list[str] = []
    for row in rows:
        prov = row.get("provenance")
        if not isinstance(prov, dict):
            prov = {k[11:]: v for k, v in row.items() if str(k).startswith("provenance_")}
        for key in ("run_id", "recipe", "recipe_hash", "model", "temperature", "seed"):
            if prov.get(key) not in (None, ""):
                seen.setdefault(key, set()).add(str(prov[key]))
        if prov.get("created_at"):
            times.append(str(prov["created_at"]))
    out: dict[str, Any] = {k: sorted(v) for k, v in seen.items()}
    if times:
        out["created"] = [min(times), max(times)]
    return out


def _sources(records: list[ExportRecord]) -> list[dict[str, Any]]:
    """The distinct ``source`` objects of imported records, in first-seen order."""
    seen: dict[str, dict[str, Any]] = {}
    for r in records:
        source = r.origin.get("source")
        if isinstance(source, dict):
            seen.setdefault(json.dumps(source, sort_keys=True), source)
    return list(seen.values())
