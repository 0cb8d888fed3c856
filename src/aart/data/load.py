"""Loading datasets to evaluate: our JSONL/CSV/Parquet, the released AART CSV, or any table of
prompts, with column mapping."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..recipe import Value
from ..types import DatasetRecord
from ..types import kind_of as _kind
from . import foreign  # a promptfoo tests file, a Hugging Face folder
from .chunks import chunked
from .export import csv_unsafe, iter_jsonl, numbered_json_lines, utf8_lines

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

    def extend(self, other: Dataset) -> None:
        """Append the records of ``other`` (a later chunk of the same file)."""
        self.texts += other.texts
        for mine, theirs in (
            (self.axes, other.axes),
            (self.annotations, other.annotations),
            (self.cells, other.cells),
        ):
            for key, column in theirs.items():
                mine.setdefault(key, []).extend(column)  # type: ignore[arg-type]

    def derived_values(self) -> dict[str, list[Value]]:
        """Value lists taken from the records' own axis values (when no lists are given)."""
        seen: dict[str, set[str]] = {}
        for axis, rows in self.axes.items():
            seen.setdefault(axis, set()).update(v for vals in rows for v in vals if v)
        for axis, labels in self.cells.items():
            seen.setdefault(axis, set()).update(v for v in labels if v)
        return {axis: [Value(value=v) for v in sorted(vs)] for axis, vs in seen.items()}


#: records read at a time: a chunk's memory, whatever the size of the file
CHUNK = 65_536


def _label(v: Any) -> str | None:
    """A cell or annotation value as text: a number in a foreign file (``"year": 3``) is the
    value "3", so values sort and compare as one kind."""
    return None if v is None else str(v)


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [row for chunk in iter_rows(path) for row in chunk]


def iter_rows(path: Path, size: int | None = None) -> Iterator[list[dict[str, Any]]]:
    """The records of a JSONL, CSV or Parquet file, ``size`` (default CHUNK) at a time."""
    size = size or CHUNK
    if foreign.handles(path):
        yield from foreign.iter_rows(path, size)
        return
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet_chunks(path, size)
        return
    rows: Iterator[dict[str, Any]]
    if suffix in (".jsonl", ".ndjson"):
        rows = iter_jsonl(path)
    elif suffix == ".csv":
        csv.field_size_limit(sys.maxsize)
        rows = _csv_rows(path)
    else:
        raise UsageError(f"{path}: unknown dataset format {suffix!r}; use .jsonl, .csv or .parquet")
    yield from chunked(rows, size)


def iter_records(path: Path) -> Iterator[DatasetRecord]:
    """The records of one of aart's own ``dataset.jsonl`` files, each validated where it is
    read: a malformed line is a usage error naming the file, the line and the fix."""
    for n, row in numbered_json_lines(path):
        yield DatasetRecord.from_line(row, f"{path}:{n}")


def _csv_rows(path: Path) -> Iterator[dict[str, Any]]:
    # aart's own CSVs guard formula-like cells with a quote (data.export.csv_safe): undone
    for row in csv.DictReader(text for _, text in utf8_lines(path)):
        yield {k: v if not isinstance(v, str) else csv_unsafe(v) for k, v in row.items()}


def _parquet_chunks(path: Path, size: int) -> Iterator[list[dict[str, Any]]]:
    """A Parquet file's records; a file pyarrow cannot read is a usage error naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # pre_buffer (the default) keeps what it read ahead: memory grew with the file
        parquet = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
        batches = parquet.iter_batches(batch_size=size)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            yield batch.to_pylist()
    except (pa.ArrowException, OSError) as e:
        if isinstance(e, OSError) and not isinstance(e, pa.ArrowException) and e.errno:
            raise  # the disk's, not the file's
        reason = " ".join(str(e).split())[:200]
        raise UsageError(
            f"{path}: not a readable Parquet file ({reason}); export it again, or give the "
            "dataset as .jsonl or .csv"
        ) from None


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
    whole: Dataset | None = None
    for chunk in iter_dataset(
        path,
        name=name,
        text_column=text_column,
        axis_columns=axis_columns,
        annotation_columns=annotation_columns,
    ):
        if whole is None:
            whole = chunk
        else:
            whole.extend(chunk)
    assert whole is not None  # iter_dataset refuses an empty file
    return whole


def iter_dataset(
    path: str | Path,
    *,
    name: str | None = None,
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
    size: int | None = None,
) -> Iterator[Dataset]:
    """:func:`load_dataset` ``size`` records at a time: every chunk is a Dataset of the same
    name, columns and notes, so a file of any size is read in flat memory."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"dataset {path} does not exist")
    # runs/bank/dataset.jsonl is better called "bank" than "dataset"
    default_name = path.parent.name if path.stem == "dataset" and path.parent.name else path.stem
    layout: _Layout | None = None
    start = 0
    for rows in iter_rows(path, size):
        if layout is None:
            layout = _Layout.of(path, rows[0], text_column, axis_columns, annotation_columns)
        layout.check(path, rows, start)
        yield layout.dataset(name or default_name, rows, _tokens_per_prompt(path))
        start += len(rows)
    if layout is None:
        raise UsageError(f"{path} holds no records (an empty file?); give a dataset with prompts")


@dataclass
class _Layout:
    """How a file's records map onto a Dataset, decided from its first record."""

    text_column: str
    axis_map: dict[str, str]
    ann_map: dict[str, str]
    #: our JSONL: nested cell / annotations / axes objects
    nested_cells: bool = False
    nested_axes: bool = False
    #: our flat CSV / Parquet: cell_<dim> and annotated_<dim> columns
    flat_cells: list[str] = field(default_factory=list)
    flat_annotations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the first record (its nested objects name the dimensions)
    first: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        path: Path,
        first: dict[str, Any],
        text_column: str,
        axis_columns: dict[str, str] | None,
        annotation_columns: dict[str, str] | None,
    ) -> _Layout:
        if text_column not in first:
            raise UsageError(
                f"{path}: no column {text_column!r}; columns are {', '.join(first)}; "
                "choose one with --text-column"
            )
        # a column no record has made an axis of no value, and "every value is mentioned"
        given = [(f"--axis {a}", c.split(":", 1)[0]) for a, c in (axis_columns or {}).items()]
        given += [(f"--annotation {a}", c) for a, c in (annotation_columns or {}).items()]
        for flag, column in given:
            if column not in first:
                raise UsageError(
                    f"{path}: {flag}={column}: no column {column!r}; columns are "
                    f"{', '.join(map(str, first))}"
                )
        if path.suffix.lower() in (".jsonl", ".json", ".ndjson") and not (
            first.get("cell") is None or isinstance(first["cell"], dict) or axis_columns
        ):
            raise UsageError(
                f"{path}: record 1: `cell` is {_kind(first['cell'])}, not an object of "
                "dimension: value; fix the record"
            )
        layout = cls(text_column, dict(axis_columns or {}), dict(annotation_columns or {}))
        released = "crime" in first and "medium_keyword" in first
        if released and not layout.axis_map and not layout.ann_map:
            layout.axis_map = {k: c + (f":{s}" if s else "") for k, (c, s) in AART_AXES.items()}
            layout.ann_map = dict(AART_ANNOTATIONS)
            if "region" in first:
                layout.notes.append(
                    "the released dataset's `region` column joins several multi-word regions "
                    "with spaces ('europe north america ...'), so it cannot be split into values "
                    "and is not an axis here; map it with --axis regions=region:SEP if your "
                    "copy separates them"
                )
        if isinstance(first.get("cell"), dict) and not layout.axis_map:
            layout.nested_cells = True
        elif not layout.axis_map and any(str(k).startswith("cell_") for k in first):
            layout.flat_cells = [k[5:] for k in first if str(k).startswith("cell_")]
            layout.flat_annotations = [k[10:] for k in first if str(k).startswith("annotated_")]
        if isinstance(first.get("axes"), dict) and not layout.axis_map:
            layout.nested_axes = True
        layout.first = first
        return layout

    def check(self, path: Path, rows: list[dict[str, Any]], start: int) -> None:
        """Refuse, naming the file and the record, a record whose nested objects have
        another shape than the layout (decided from the first record) expects: a `cell`
        that is not an object, a cell value that is not one text."""
        nested = [("cell", self.nested_cells), ("annotations", self.nested_cells)]
        nested.append(("annotations", self.nested_axes))
        for k, r in enumerate(rows, start=start + 1):
            for key, used in nested:
                if not used or r.get(key) is None:
                    continue
                obj = r[key]
                if not isinstance(obj, dict):
                    raise UsageError(
                        f"{path}: record {k}: `{key}` is {_kind(obj)}, not an object of "
                        f"dimension: value as in record 1; fix the record"
                    )
                for axis, v in obj.items():
                    if v is not None and not isinstance(v, (str, int, float)):
                        raise UsageError(
                            f"{path}: record {k}: `{key}.{axis}` is {_kind(v)}; a {key} holds "
                            "one value per dimension (an attempt's several values go in "
                            "`axes`); fix the record"
                        )
            if self.nested_axes and r.get("axes") is not None:
                axes = r["axes"]
                bad = not isinstance(axes, dict) or any(
                    not isinstance(v, list) or not all(isinstance(x, str) for x in v)
                    for v in axes.values()
                )
                if bad:
                    raise UsageError(
                        f"{path}: record {k}: `axes` must be an object of dimension: [values] "
                        "as in record 1; fix the record"
                    )

    def dataset(self, name: str, rows: list[dict[str, Any]], tokens: float | None) -> Dataset:
        ds = Dataset(name, [], tokens_per_prompt=tokens, notes=list(self.notes))
        ds.texts = [str(r.get(self.text_column) or "") for r in rows]
        first = self.first
        if self.nested_cells:
            ds.cells = {
                a: [_label((r.get("cell") or {}).get(a)) for r in rows] for a in first["cell"]
            }
            ds.annotations = {
                a: [_label((r.get("annotations") or {}).get(a)) for r in rows]
                for a in (first.get("annotations") or {})
            }
        for a in self.flat_cells:
            ds.cells[a] = [str(r.get(f"cell_{a}") or "").strip() or None for r in rows]
        for a in self.flat_annotations:
            ds.annotations[a] = [str(r.get(f"annotated_{a}") or "").strip() or None for r in rows]
        if self.nested_axes:
            ds.axes = {
                a: [list((r.get("axes") or {}).get(a, [])) for r in rows] for a in first["axes"]
            }
            ds.annotations = {
                a: [_label((r.get("annotations") or {}).get(a)) for r in rows]
                for a in (first.get("annotations") or {})
            }
        for axis, spec in self.axis_map.items():
            col, _, sep = spec.partition(":")
            ds.axes[axis] = [
                [
                    v.strip()
                    for v in (str(r.get(col) or "").split(sep) if sep else [str(r.get(col) or "")])
                    if v.strip()
                ]
                for r in rows
            ]
        for axis, col in self.ann_map.items():
            ds.annotations[axis] = [
                (str(r[col]).strip() or None) if r.get(col) else None for r in rows
            ]
        return ds
