"""Human review of a dataset and of an attack's verdicts: what is reviewed, the labels people
give (kept in run.db, every save a new version), and what they measure: the good rate with its
Wilson interval, agreement per dimension beside the paper's reviewers, agreement between
reviewers, and each judge's precision, recall and kappa against the people."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..data.export import write_csv, write_jsonl
from ..data.load import read_rows
from ..errors import UsageError

# the figures moved to aart.evaluate.human; these names stay importable from here
from ..evaluate.human import LEGACY_RECORD as LEGACY_RECORD
from ..evaluate.human import MIN_N_PER_VALUE as MIN_N_PER_VALUE
from ..evaluate.human import PAPER_AGREEMENT as PAPER_AGREEMENT
from ..evaluate.human import PAPER_AXES as PAPER_AXES
from ..evaluate.human import (
    RECORD,
    VERDICT,
    _latest,
    dataset_figures,
    dataset_labels,
    dim_state,
    labels_db_path,
    legacy_ids,
    resolve_verdict_labels,
    stable_ids,
    verdict_figures,
    verdict_id,
)
from ..evaluate.human import fixed2 as fixed2
from ..evaluate.human import kappa as kappa
from ..evaluate.human import paper_axis as paper_axis
from ..store.db import RunDB
from ..types import Cell, DatasetRecord, Provenance

FLAGS = ("unclear", "near-duplicate", "off-policy", "unsafe to keep")
HUMAN_VERDICTS = ("violates", "safe", "unsure")
#: a dimension's three states in a label: matches, does not, not judged (left out)
DIM_STATES = {"yes": True, "no": False}
#: the version of the web form's labels; labels without it come from the two-state form
LABEL_FORM = 2


def _dataset_path(path: Path) -> Path:
    if path.is_dir():
        for name in ("dataset.jsonl", "dataset.parquet", "dataset.csv"):
            if (path / name).exists():
                return path / name
        raise UsageError(f"{path} holds no dataset.jsonl; give a run directory or a dataset file")
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    return path


#: a record's fields shown elsewhere on the page; every other text field (the recipe's output
#: fields: reasoning, topics, rationales, whatever their names) is shown as reasoning
NOT_REASONING = {"id", "prompt", "cell", "annotations", "verified", "provenance", "strategy"}
FLAT_PREFIXES = ("cell_", "annotated_", "verified_", "provenance_")  # CSV and Parquet columns


@dataclass
class ReviewRecord:
    """A dataset record as the review shows it: its stable id, the prompt, its cell and
    annotations, the recipe's other text fields (shown as reasoning) and its provenance."""

    id: str
    prompt: str
    cell: Cell
    annotations: dict[str, str]
    reasoning: dict[str, str]
    provenance: Provenance

    #: the provenance shown under the prompt
    SHOWN = ("model", "round", "job_id")

    def provenance_shown(self) -> dict[str, Any]:
        """The provenance fields the record has of those shown (none for a foreign file)."""
        p = self.provenance
        return {k: getattr(p, k) for k in self.SHOWN if k in p.model_fields_set}


def _record(rid: str, row: dict[str, Any], where: str) -> ReviewRecord:
    """A row of any table (our JSONL, CSV or Parquet, a foreign file) as a review record. Its
    nested objects are validated as a dataset record's (``where`` locates a bad one); a
    non-object under such a key (a foreign column named ``cell``) is no cell, as before."""
    nested = {"cell", "annotations", "verified", "provenance"}
    line = {k: v for k, v in row.items() if k not in nested or isinstance(v, dict)}
    line["prompt"] = str(row.get("prompt") or "")
    rec = DatasetRecord.from_line(line, where)
    cell = rec.cell or {k[5:]: str(v) for k, v in row.items() if str(k).startswith("cell_") and v}
    notes = {
        k: v
        for k, v in row.items()
        if k not in NOT_REASONING
        and not str(k).startswith(FLAT_PREFIXES)
        and isinstance(v, str)
        and v.strip()
    }
    return ReviewRecord(rid, rec.prompt, cell, rec.annotations, notes, rec.provenance)


def stratified_sample(
    records: list[ReviewRecord], n: int, axis: str | None, seed: int = 0
) -> list[ReviewRecord]:
    """``n`` records, spread evenly over the values of ``axis`` (round-robin over shuffled
    strata), or a plain seeded sample without one."""
    rng = random.Random(seed)
    if n >= len(records):
        return records
    if not axis:
        return sorted(rng.sample(records, n), key=lambda r: records.index(r))
    strata: dict[str, list[ReviewRecord]] = defaultdict(list)
    for r in records:
        strata[str(r.cell.get(axis, ""))].append(r)
    for rs in strata.values():
        rng.shuffle(rs)
    out: list[ReviewRecord] = []
    keys = sorted(strata)
    while len(out) < n:
        for k in keys:
            if strata[k] and len(out) < n:
                out.append(strata[k].pop())
    return out


@dataclass
class Review:
    dataset: Path
    records: list[ReviewRecord]
    db: RunDB
    reviewer: str
    #: the attack's records (prompt, response, verdicts), when reviewing verdicts
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    attack_db: RunDB | None = None
    #: legacy position keys of rows without an id, to their stable ids
    legacy: dict[str, str] = field(default_factory=dict)
    #: what the last export applied: reviewers, excluded, edited, edit_conflicts, kept
    applied: dict[str, Any] = field(default_factory=dict)

    @property
    def dims(self) -> list[str]:
        seen: list[str] = []
        for r in self.records:
            seen += [d for d in r.cell if d not in seen]
        return seen

    def close(self) -> None:
        self.db.close()
        if self.attack_db is not None:
            self.attack_db.close()

    # -- labels ------------------------------------------------------------------------------
    def label_record(self, record_id: str, data: dict[str, Any]) -> int:
        return self.db.add_label(RECORD, record_id, self.reviewer, data)

    def label_verdict(self, record_id: str, data: dict[str, Any]) -> int:
        assert self.attack_db is not None
        return self.attack_db.add_label(VERDICT, record_id, self.reviewer, data)

    def all_record_labels(self) -> list[dict[str, Any]]:
        """Every reviewer's latest label of each record of the dataset (sampled or not)."""
        return _latest(self.db.latest_labels(RECORD), self.legacy)

    def record_labels(self) -> list[dict[str, Any]]:
        """The latest labels of the records under review."""
        ids = {r.id for r in self.records}
        return [x for x in self.all_record_labels() if x["record_id"] in ids]

    def verdict_labels(self) -> list[dict[str, Any]]:
        if self.attack_db is None:
            return []
        return resolve_verdict_labels(self.verdicts, self.attack_db.latest_labels(VERDICT))

    def mine(self, kind: str) -> dict[str, dict[str, Any]]:
        labels = self.record_labels() if kind == RECORD else self.verdict_labels()
        return {x["record_id"]: x for x in labels if x["reviewer"] == self.reviewer}

    # -- figures -----------------------------------------------------------------------------
    def dataset_figures(self) -> dict[str, Any]:
        return dataset_figures(self.record_labels(), self.dims)

    def verdict_figures(self) -> dict[str, Any]:
        return verdict_figures(self.verdicts, self.verdict_labels())

    # -- outputs -----------------------------------------------------------------------------
    def export(self, out: Path | None = None) -> dict[str, Path]:
        """``dataset.reviewed.jsonl`` and ``labels.csv`` (every reviewer's latest labels),
        beside the dataset. Every reviewer's labels apply, over the whole dataset (not only
        a sample): a record is excluded when any reviewer's latest label excludes it (a
        reviewer reverts it by saving the record without it); of several reviewers' edits
        the latest saved wins, the others are named in its provenance. ``self.applied``
        says whose labels were applied and what they did."""
        out = out or self.dataset.parent
        by_record: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for x in self.all_record_labels():  # in save order
            by_record[x["record_id"]].append(x)
        rows, excluded, edited, conflicts = [], 0, 0, 0
        # the rows as read, not typed records: the reviewed file keeps every key of every
        # line as it was (a CSV's flat columns, a foreign file's own), only edits change
        source = read_rows(self.dataset)
        for rid, r in zip(stable_ids(source), source, strict=True):
            labels = by_record.get(rid, [])
            if any(x.get("exclude") for x in labels):
                excluded += 1
                continue
            edits = [x for x in labels if x.get("edit") and x["edit"] != r.get("prompt")]
            if edits:
                last = edits[-1]
                prov = dict(r.get("provenance") or {})
                prov["edited"] = {
                    "by": last["reviewer"],
                    "version": last["version"],
                    "original": r.get("prompt"),
                }
                others = sorted({x["reviewer"] for x in edits if x["edit"] != last["edit"]})
                if others:
                    prov["edited"]["other_edits_by"] = others
                    conflicts += 1
                r = {**r, "prompt": last["edit"], "provenance": prov}
                edited += 1
            rows.append(r)
        paths = {"dataset": out / "dataset.reviewed.jsonl", "labels": out / "labels.csv"}
        write_jsonl(rows, paths["dataset"])
        self._write_labels_csv(paths["labels"])
        self.applied = {
            "reviewers": sorted({x["reviewer"] for xs in by_record.values() for x in xs}),
            "excluded": excluded,
            "edited": edited,
            "edit_conflicts": conflicts,
            "kept": len(rows),
        }
        return paths

    def _write_labels_csv(self, path: Path) -> None:
        """Every reviewer's latest label, one row each, in plain values: true/false or empty
        (not said), a column per dimension (``match_<dim>``: true, false, or empty for not
        judged), flags joined by "; ", times in ISO-8601 UTC."""
        rows = []
        kinds = [(RECORD, self.all_record_labels())]
        if self.attack_db is not None:
            kinds.append((VERDICT, self.verdict_labels()))
        dims = list(self.dims)
        for _, labels in kinds:
            for x in labels:
                dims += [d for d in (x.get("dims") or {}) if d not in dims]
        for kind, labels in kinds:
            for x in labels:
                row: dict[str, Any] = {
                    "kind": kind,
                    "record_id": x["record_id"],
                    "reviewer": x["reviewer"],
                    "version": x["version"],
                    "created_at": iso_utc(x["created_at"]),
                }
                for key, v in x.items():
                    if key in row or key in ("form", "dims"):
                        continue
                    if key == "flags" and isinstance(v, list):
                        v = "; ".join(map(str, v))
                    row[key] = plain(v)
                if kind == RECORD:
                    row.update({f"match_{d}": plain(dim_state(x, d)) for d in dims})
                rows.append(row)
        columns = ["kind", "record_id", "reviewer", "version", "created_at"]
        for row in rows:
            columns += [c for c in row if c not in columns]
        write_csv(rows, path, columns)

    def applied_line(self) -> str:
        """One line on whose labels the last export applied."""
        a = self.applied
        if not a.get("reviewers"):
            return "no labels yet: the reviewed dataset is the dataset"
        return (
            f"applied the latest labels of {len(a['reviewers'])} reviewer"
            f"{'s' if len(a['reviewers']) != 1 else ''} ({', '.join(a['reviewers'])}): "
            f"{a['excluded']} excluded, {a['edited']} edited"
            + (
                f" ({a['edit_conflicts']} edited by several: the latest edit wins)"
                if a["edit_conflicts"]
                else ""
            )
            + f", {a['kept']} kept; an exclusion by anyone holds"
        )


def iso_utc(t: float) -> str:
    """``2026-12-01T10:23:41Z``."""
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def plain(v: Any) -> Any:
    """A CSV cell: true/false, empty for None, text as it is (write_csv guards formulas)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def open_review(
    path: str | Path,
    *,
    attack: str | Path | None = None,
    sample: int | None = None,
    stratify_by: str | None = None,
    reviewer: str = "reviewer",
    seed: int = 0,
) -> Review:
    dataset = _dataset_path(Path(path))
    rows = read_rows(dataset)
    records = [
        _record(rid, r, f"{dataset}: record {k}")
        for k, (rid, r) in enumerate(zip(stable_ids(rows), rows, strict=True), start=1)
    ]
    if not records:
        raise UsageError(f"{dataset} holds no records to review")
    if stratify_by and not any(stratify_by in r.cell for r in records):
        raise UsageError(f"no record has a cell value for {stratify_by!r}; leave out --stratify-by")
    if sample:
        records = stratified_sample(records, sample, stratify_by, seed)
    db = RunDB(labels_db_path(dataset), lock=False)
    verdicts: list[dict[str, Any]] = []
    attack_db = None
    if attack is not None:
        if not (Path(attack) / "run.db").exists():
            db.close()
            raise UsageError(f"{attack} holds no attack (no run.db); give an attack's --out")
        attack_db = RunDB(Path(attack) / "run.db", lock=False)
        verdicts = [r for r in attack_db.records("attack") if r.get("verdicts")]
        verdicts.sort(key=lambda r: (-disagreement(r), r["index"]))
    return Review(dataset, records, db, reviewer, verdicts, attack_db, legacy_ids(rows))


def disagreement(r: dict[str, Any]) -> int:
    """1 when the judges that gave a verdict disagree (shown first), else 0."""
    said = {v["violates"] for v in r["verdicts"].values() if v["violates"] is not None}
    return int(len(said) > 1)


__all__ = [
    "DIM_STATES",
    "FLAGS",
    "HUMAN_VERDICTS",
    "Review",
    "dataset_figures",
    "dataset_labels",
    "dim_state",
    "open_review",
    "stable_ids",
    "stratified_sample",
    "verdict_figures",
    "verdict_id",
]
