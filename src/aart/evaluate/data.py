"""Loading datasets to evaluate: our JSONL/CSV/Parquet, the released AART CSV, or any table of
prompts, with column mapping."""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..recipe import Value
from ..store.export import read_jsonl

# The released AART dataset's columns, mapped onto the demo recipe's dimensions.
AART_AXES = {"policy_concepts": ("crime", None), "task_formats": ("use_case", ",")}
AART_ANNOTATIONS = {"task_formats": "medium_keyword"}


@dataclass
class Dataset:
    """Prompts plus, where known, per record: its cell (the one value of each dimension it was
    built for), the values its attempt sampled (axes; legacy and released datasets) and the
    values the model annotated."""

    name: str
    texts: list[str]
    axes: dict[str, list[list[str]]] = field(default_factory=dict)
    annotations: dict[str, list[str | None]] = field(default_factory=dict)
    cells: dict[str, list[str | None]] = field(default_factory=dict)
    #: what the reader should know about how the file was read
    notes: list[str] = field(default_factory=list)
    #: tokens spent per prompt where the file's directory says (a run's or baseline's)
    tokens_per_prompt: float | None = None

    def cell_of(self, i: int) -> dict[str, str]:
        """Record i's one value per dimension: its cell, else its annotated value, else an
        attempt value when the attempt had only one (a prompt is never counted for several
        values of one axis)."""
        out: dict[str, str] = {}
        for a, rows in self.axes.items():
            if len(rows[i]) == 1:
                out[a] = rows[i][0]
        for labelled in (self.annotations, self.cells):
            for a, labels in labelled.items():
                label = labels[i]
                if label:
                    out[a] = label
        return out

    def __len__(self) -> int:
        return len(self.texts)

    def derived_values(self) -> dict[str, list[Value]]:
        """Value lists taken from the records' own axis values (when no lists are given)."""
        seen: dict[str, set[str]] = {}
        for axis, rows in self.axes.items():
            seen.setdefault(axis, set()).update(v for vals in rows for v in vals if v)
        for axis, labels in self.cells.items():
            seen.setdefault(axis, set()).update(v for v in labels if v)
        return {axis: [Value(value=v) for v in sorted(vs)] for axis, vs in seen.items()}


def read_rows(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return read_jsonl(path)
    if suffix == ".csv":
        csv.field_size_limit(sys.maxsize)
        with path.open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    raise UsageError(f"{path}: unknown dataset format {suffix!r}; use .jsonl, .csv or .parquet")


def _tokens_per_prompt(path: Path) -> float | None:
    """What the dataset cost per prompt, from the summary its run or baseline wrote beside
    it (so datasets are compared on the same budget)."""
    for name, key in (
        ("summary.json", "tokens_per_prompt"),
        ("baseline.json", "tokens_per_valid_prompt"),
    ):
        summary = path.parent / name
        if path.name == "dataset.jsonl" and summary.exists():
            try:
                value = json.loads(summary.read_text(encoding="utf-8")).get(key)
            except ValueError:
                return None
            return float(value) if isinstance(value, (int, float)) else None
    return None


def parse_mapping(items: tuple[str, ...], what: str, form: str = "NAME=COLUMN") -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, col = item.partition("=")
        if not sep or not name or not col:
            raise UsageError(f"{what} {item!r} must look like {form}")
        out[name] = col
    return out


def load_dataset(
    path: str | Path,
    *,
    name: str | None = None,
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
) -> Dataset:
    """Read a dataset. Our own records bring their axes and annotations; the released AART CSV
    is recognised by its columns; other tables take ``axis_columns`` ({axis: "column[:sep]"})
    and ``annotation_columns`` ({axis: column})."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"dataset {path} does not exist")
    rows = read_rows(path)
    if not rows:
        raise UsageError(f"{path} holds no records; nothing to evaluate or attack")
    # runs/bank/dataset.jsonl is better called "bank" than "dataset"
    default_name = path.parent.name if path.stem == "dataset" and path.parent.name else path.stem
    ds = Dataset(name or default_name, [], tokens_per_prompt=_tokens_per_prompt(path))
    if rows and text_column not in rows[0]:
        raise UsageError(
            f"{path}: no column {text_column!r}; columns are {', '.join(rows[0])}; "
            "choose one with --text-column"
        )
    ds.texts = [str(r.get(text_column) or "") for r in rows]
    axis_map = dict(axis_columns or {})
    ann_map = dict(annotation_columns or {})
    if rows and "crime" in rows[0] and "medium_keyword" in rows[0] and not axis_map and not ann_map:
        axis_map = {k: c + (f":{s}" if s else "") for k, (c, s) in AART_AXES.items()}
        ann_map = dict(AART_ANNOTATIONS)
        if "region" in rows[0]:
            ds.notes.append(
                "the released dataset's `region` column joins several multi-word regions with "
                "spaces ('europe north america ...'), so it cannot be split into values and is "
                "not an axis here; map it with --axis regions=region:SEP if your copy "
                "separates them"
            )
    if rows and isinstance(rows[0].get("cell"), dict) and not axis_map:
        ds.cells = {a: [(r.get("cell") or {}).get(a) for r in rows] for a in rows[0]["cell"]}
        ds.annotations = {
            a: [(r.get("annotations") or {}).get(a) for r in rows]
            for a in (rows[0].get("annotations") or {})
        }
    elif rows and not axis_map and any(str(k).startswith("cell_") for k in rows[0]):
        # our flat CSV / Parquet: cell_<dim> and annotated_<dim> columns
        for k in rows[0]:
            if str(k).startswith("cell_"):
                ds.cells[k[5:]] = [str(r.get(k) or "").strip() or None for r in rows]
            elif str(k).startswith("annotated_"):
                ds.annotations[k[10:]] = [str(r.get(k) or "").strip() or None for r in rows]
    if rows and isinstance(rows[0].get("axes"), dict) and not axis_map:
        ds.axes = {
            a: [list((r.get("axes") or {}).get(a, [])) for r in rows] for a in rows[0]["axes"]
        }
        ds.annotations = {
            a: [(r.get("annotations") or {}).get(a) for r in rows]
            for a in (rows[0].get("annotations") or {})
        }
    for axis, spec in axis_map.items():
        col, _, sep = spec.partition(":")
        ds.axes[axis] = [
            [
                v.strip()
                for v in (str(r.get(col) or "").split(sep) if sep else [str(r.get(col) or "")])
                if v.strip()
            ]
            for r in rows
        ]
    for axis, col in ann_map.items():
        ds.annotations[axis] = [(str(r[col]).strip() or None) if r.get(col) else None for r in rows]
    return ds
