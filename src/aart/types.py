"""The records that cross module boundaries on the dataset side: a cell, an attempt (one line
of ``blueprint.jsonl``, one generation call), a dataset record with its provenance (one line
of ``dataset.jsonl``), and the kind of a record stored in ``run.db``.

They are pydantic models because they are file lines: a line is validated once, where it is
read (``Attempt.from_line``, ``DatasetRecord.from_line``), and written back only at the
storage boundary (``to_line``). The field names are the files' keys, so the files do not
change. Extra keys are kept: the recipe's output fields and the columns users add travel with
the record. This module imports nothing of aart but its errors (it is the bottom layer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

#: One query's blueprint: exactly one value of every dimension ({dimension: value}). A plain
#: mapping, not a model: it is a template's context and a JSON key as it stands.
Cell = dict[str, str]


def attempt_values(cells: Sequence[Mapping[str, str]]) -> dict[str, list[str]]:
    """The values an attempt's cells use, per axis, sorted (what its template lists)."""
    axes: list[str] = []
    for c in cells:
        axes += [a for a in c if a not in axes]
    return {a: sorted({c[a] for c in cells if a in c}) for a in axes}


def cells_from_values(values: Mapping[str, Sequence[str]], queries: int) -> list[Cell]:
    """Cells for an attempt that lists only ``values``: each axis's values dealt round-robin,
    so every listed value is used when there are enough queries."""
    return [
        {axis: vals[q % len(vals)] for axis, vals in values.items() if vals} for q in range(queries)
    ]


def kind_of(value: Any) -> str:
    """What a JSON value is, for a message (never the value itself: it is data)."""
    names = {str: "a string", list: "a list", dict: "an object", bool: "a boolean"}
    return names.get(type(value), "null" if value is None else f"a {type(value).__name__}")


def problem(e: ValidationError) -> str:
    """One line saying what is wrong with a record (the first problem pydantic found), by
    field path and the kind of value found, never the value (it is data) nor a traceback;
    worded as the dataset loader words its own checks ("`cell` is a string, not an object")."""
    err = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "the line"
    kind = err["type"]
    if kind == "missing":
        return f"`{where}` is missing"
    if kind in ("too_short", "string_too_short"):
        return f"`{where}` is empty"
    if kind == "greater_than_equal":
        return f"`{where}` must be at least {err.get('ctx', {}).get('ge')}"
    expected = {
        "string_type": "a string",
        "dict_type": "an object",
        "list_type": "a list",
        "int_type": "a whole number",
        "int_parsing": "a whole number",
        "int_from_float": "a whole number",
        "bool_type": "true or false",
        "bool_parsing": "true or false",
        "float_type": "a number",
        "float_parsing": "a number",
    }.get(kind)
    if expected is None:
        return f"`{where}`: {err['msg'].lower()}"
    return f"`{where}` is {kind_of(err.get('input'))}, not {expected}"


class _Line(BaseModel):
    # numbers where texts are expected (a hand-written `id: 3`) are read as texts; extra keys
    # are kept, since users add columns and recipes add output fields
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)

    @property
    def extra(self) -> dict[str, Any]:
        """The keys beyond the declared fields, in the line's order."""
        return dict(self.__pydantic_extra__ or {})


class Attempt(_Line):
    """One line of ``blueprint.jsonl``: a generation call asking for one query per cell.
    ``values`` are the values its cells use (what its template lists) and ``queries`` their
    number; ``avoid`` (job payloads only) holds, per cell position, prompts not to repeat.
    Hand-added keys are kept."""

    id: str = Field(min_length=1)
    cells: list[Cell] = Field(min_length=1)
    values: dict[str, list[str]]
    queries: int = Field(ge=1)
    avoid: dict[str, list[str]] | None = None
    #: a top-up attempt's gap ({dimension: value}, written by `aart topup`)
    topup_for: dict[str, str] | None = None

    @classmethod
    def of(cls, id: str, cells: list[Cell], **extra: Any) -> Attempt:
        """An attempt for ``cells`` (their values and count derived from them)."""
        return cls(id=id, cells=cells, values=attempt_values(cells), queries=len(cells), **extra)

    @classmethod
    def from_line(cls, line: Any, default_queries: int) -> Attempt:
        """A blueprint line made consistent after a human edit: ``cells`` win; a ``queries``
        below their number keeps the first cells, above it repeats them; a line with
        ``values`` only gets cells dealt from them. Raises ValueError (one line, no
        traceback) on a malformed line."""
        if not isinstance(line, dict):
            raise ValueError(f"each line must be a JSON object, not {kind_of(line)}")
        if not line.get("id"):
            raise ValueError("each line needs an `id`")
        raw = line.get("cells")
        try:
            if raw is not None:
                shape = _Cells.model_validate({"cells": raw})
                queries = _Queries.model_validate({"queries": line.get("queries", len(raw))})
                cells = [dict(shape.cells[q % len(raw)]) for q in range(queries.queries)]
            else:
                values = line.get("values")
                if not isinstance(values, dict) or not values:
                    raise ValueError("each line needs `cells` (or a `values` mapping)")
                listed = _Values.model_validate({"values": values})
                queries = _Queries.model_validate({"queries": line.get("queries", default_queries)})
                cells = cells_from_values(listed.values, queries.queries)
            return cls.model_validate(
                {**line, "cells": cells, "values": attempt_values(cells), "queries": len(cells)}
            )
        except ValidationError as e:
            raise ValueError(problem(e)) from None

    def to_line(self) -> dict[str, Any]:
        """The blueprint line (or job payload) to write: its keys in the order read."""
        line = self.model_dump(exclude_unset=True)
        if line.get("avoid") is None:
            line.pop("avoid", None)
        return line


class _Cells(BaseModel):
    cells: list[dict[str, str]] = Field(min_length=1)


class _Queries(BaseModel):
    queries: int = Field(ge=1)


class _Values(BaseModel):
    model_config = ConfigDict(coerce_numbers_to_str=True)
    values: dict[str, list[str]]


class Provenance(_Line):
    """Where a generated record came from: the run, recipe and model, the call's settings,
    the job, and the cell's place in the blueprint (``attempt_id``, ``cell_index``). The
    review's export adds ``edited`` (kept as an extra key)."""

    run_id: str = ""
    recipe: str = ""
    recipe_hash: str = ""
    model: str = ""
    temperature: float | None = None
    seed: int | None = None
    round: int = 0
    job_id: str = ""
    call_id: int | str | None = None
    cached: bool = False
    created_at: str = ""
    attempt_id: str = ""
    cell_index: int = 0

    @property
    def slot(self) -> tuple[str, int]:
        """(attempt id, cell index): where the record's cell stands in the blueprint."""
        return self.attempt_id, self.cell_index


#: the nested objects of a dataset record, written after its flat fields
NESTED = ("cell", "annotations", "verified", "provenance")


class DatasetRecord(_Line):
    """One line of ``dataset.jsonl``: the prompt, the cell it was written for, the values the
    model annotated, per dimension whether verification found the cell's value, and its
    provenance. The recipe's other output fields (reasons, topics) and added columns are
    extra keys, written between ``prompt`` and ``cell`` as generation writes them."""

    id: str = ""
    prompt: str
    cell: Cell = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    verified: dict[str, bool] = Field(default_factory=dict)
    #: empty (and not written) for a record that came without one
    provenance: Provenance = Field(default_factory=Provenance)

    @field_validator("cell", "annotations", "verified", mode="before")
    @classmethod
    def _no_nulls(cls, value: Any) -> Any:
        """A null object, or a null value in one, is no value (as the evaluation reads it)."""
        if value is None:
            return {}
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if v is not None}
        return value

    @classmethod
    def from_line(cls, line: Any, where: str) -> DatasetRecord:
        """A record read from a file; ``where`` ("path:line") locates a malformed one in the
        one-line error (a :class:`~aart.errors.UsageError`, never a pydantic traceback)."""
        from .errors import UsageError

        if not isinstance(line, dict):
            raise UsageError(
                f"{where}: expected a JSON object, found {kind_of(line)}; fix the line"
            )
        try:
            return cls.model_validate(line)
        except ValidationError as e:
            raise UsageError(f"{where}: {problem(e)}; fix the record") from None

    def to_line(self) -> dict[str, Any]:
        """The dataset line: id, prompt, the extra fields, then the nested objects (the key
        order generation has always written)."""
        set_ = self.model_fields_set
        line: dict[str, Any] = {k: getattr(self, k) for k in ("id", "prompt") if k in set_}
        line.update(self.extra)
        for k in NESTED:
            if k == "provenance" and k in set_:
                line[k] = self.provenance.model_dump(exclude_unset=True)
            elif k in set_:
                line[k] = dict(getattr(self, k))
        return line

    def rejected(self, reason: str) -> DatasetRecord:
        """This record kept out of the dataset, with why (stored beside it in run.db)."""
        return self.model_copy(update={"reason": reason})

    def flat(self) -> dict[str, Any]:
        """One flat row for CSV and Parquet: ``cell_<dim>``, ``annotated_<dim>``,
        ``verified_<dim>`` and ``provenance_<key>`` columns after the flat fields."""
        line = self.to_line()
        row = {k: v for k, v in line.items() if k not in NESTED}
        for axis, v in self.cell.items():
            row[f"cell_{axis}"] = v
        for axis, ok in self.verified.items():
            row[f"verified_{axis}"] = ok
        for axis, v in self.annotations.items():
            row[f"annotated_{axis}"] = v
        if "provenance" in self.model_fields_set:
            for k, v in self.provenance.model_dump(exclude_unset=True).items():
                row[f"provenance_{k}"] = v
        return row


class Rejection(_Line):
    """An item or answer kept out of the dataset (invalid, refused, or a short answer), with
    why: the item and its cell, or the raw answer, or how many queries were missing."""

    reason: str = ""
    item: Any = None
    cell: Cell | None = None
    raw_text: str | None = None
    missing: int = 0

    @property
    def is_item(self) -> bool:
        """One item of an answer (not the whole answer, nor a count of missing ones)."""
        return "item" in self.model_fields_set

    @property
    def is_answer(self) -> bool:
        """A whole answer (a call that never parsed, or a refusal of the call)."""
        return "raw_text" in self.model_fields_set

    def to_line(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


class RecordKind(StrEnum):
    """What a record stored in ``run.db`` is (its own column beside the job's stage).
    Before migration 6 the kind was a suffix of the stage ("generate.refused")."""

    #: a faithful generated prompt: a candidate for the dataset
    PROMPT = "prompt"
    #: an item that failed validation, an answer that never parsed, or a short answer
    INVALID = "invalid"
    #: an item, answer or request the model (or the provider's filter) refused
    REFUSED = "refused"
    #: a valid item that failed verification against its cell
    UNFAITHFUL = "unfaithful"
    #: faithful, but restating its cell: rejected for diversity and topped up
    ALIKE = "alike"
    #: one attack job's result
    RESULT = "result"

    @property
    def stage(self) -> str:
        """The job stage whose jobs write this kind."""
        return "attack" if self is RecordKind.RESULT else "generate"

    @classmethod
    def of(cls, value: RecordKind | str) -> RecordKind:
        """The kind a legacy stage string names: "generate" (its prompts), "attack" (its
        results), or a suffixed stage such as "generate.refused"."""
        if isinstance(value, RecordKind):
            return value
        stage, _, suffix = value.partition(".")
        if suffix:
            return cls(suffix)
        if stage == "attack":
            return cls.RESULT
        if stage == "generate":
            return cls.PROMPT
        return cls(stage)


# -- the evaluation (`aart evaluate`, `aart.evaluate.evaluate`) -------------------------------


class _Keyed:
    """Read access by key too (``ev["datasets"][0]["coverage"]``), for code written against
    the dict that ``evaluate()`` returned before it was typed."""

    def _keys(self) -> list[str]:
        """The keys its JSON object has."""
        return [f.name for f in fields(self)]  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys()

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


@dataclass
class DatasetEvaluation(_Keyed):
    """What `aart evaluate` measured of one dataset. The measures' own figures (coverage per
    axis, the diversity metrics, the topics) are the dicts their modules compute."""

    name: str
    prompts: int
    #: tokens the dataset's run (or baseline) spent per prompt, when its directory says
    tokens_per_prompt: float | None
    coverage: dict[str, dict[str, Any]]
    annotations: dict[str, dict[str, Any]]
    agreement: dict[str, dict[str, Any]]
    #: a multilingual dataset's coverage per language (empty for one language)
    coverage_by_language: dict[str, Any]
    length: dict[str, Any]
    diversity: dict[str, Any]
    vocabulary: int
    #: share of the sampled records whose prompt restates its cell (None: no cells)
    restated_cell_share: float | None
    restated_checked: int
    notes: list[str] = field(default_factory=list)
    #: topic figures, when topics were labelled (absent from the JSON otherwise)
    topics: dict[str, Any] | None = None

    def _keys(self) -> list[str]:
        keys = super()._keys()
        return keys if self.topics is not None else [k for k in keys if k != "topics"]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["topics"] is None:
            del d["topics"]
        return d


@dataclass
class DiversityGap(_Keyed):
    """A diversity figure the Gaps section flags, against the reference's."""

    dataset: str
    measure: str
    value: float
    reference: float | None
    text: str


@dataclass
class Table(_Keyed):
    """The Table-2-style comparison: a header and one row of texts per dataset."""

    header: list[str]
    rows: list[list[str]]


@dataclass
class Evaluation(_Keyed):
    """What ``evaluate()`` returns; :meth:`as_dict` is ``evaluation.json`` (written only by
    the report, at the storage boundary)."""

    #: the figures diversity is held against (a reference dataset's, or the released AART's)
    reference: dict[str, Any]
    diversity_gaps: list[DiversityGap]
    #: where the value lists came from (a recipe, a run, a directory, the records)
    values_from: str
    value_lists: dict[str, list[str]]
    datasets: list[DatasetEvaluation]
    table: Table
    #: the embedder used (None: embeddings off)
    embeddings: str | None
    #: the people's labels of the dataset (`aart review`), when there are any
    human_review: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "diversity_gaps": [asdict(g) for g in self.diversity_gaps],
            "values_from": self.values_from,
            "value_lists": self.value_lists,
            "datasets": [d.as_dict() for d in self.datasets],
            "table": asdict(self.table),
            "embeddings": self.embeddings,
            "human_review": self.human_review,
        }
