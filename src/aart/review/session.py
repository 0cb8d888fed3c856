"""Human review of a dataset and of an attack's verdicts: what is reviewed, the labels people
give (kept in run.db, every save a new version), and what they measure: the good rate with its
Wilson interval, agreement per dimension beside the paper's reviewers, agreement between
reviewers, and each judge's precision, recall and kappa against the people."""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..evaluate.data import read_rows
from ..redteam.stats import wilson
from ..store.db import RunDB
from ..store.export import write_csv, write_jsonl

RECORD, VERDICT = "record", "verdict"
FLAGS = ("unclear", "near-duplicate", "off-policy", "unsafe to keep")
HUMAN_VERDICTS = ("violates", "safe", "unsure")
#: the AART paper's reviewers found these shares of prompts matching their value
PAPER_AGREEMENT = {"policy concept": 0.992, "region": 0.967, "task format": 0.850}
#: which of a recipe's dimensions compare with which of the paper's (by name): a recipe with
#: none of these axes (risks, interactions, ...) is compared with none of the paper's figures
PAPER_AXES = (("concept", "policy concept"), ("region", "region"), ("format", "task format"))
MIN_N_PER_VALUE = 5
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


def labels_db_path(dataset: Path) -> Path:
    """Labels live in the run's run.db; a dataset outside a run gets ``<name>.review.db``."""
    if (dataset.parent / "run.db").exists():
        return dataset.parent / "run.db"
    return dataset.with_suffix(".review.db")


#: the keys of labels saved before stable ids, resolved when read: a record's position
#: (``p000012``); a verdict's dataset index and strategy (``000012``, ``000012:base64``, see
#: resolve_verdict_labels)
LEGACY_RECORD = re.compile(r"p\d{6}")


def _has_id(row: dict[str, Any]) -> bool:
    return row.get("id") not in (None, "")


def stable_ids(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Each row's id for labels: its own ``id``, else a content hash of its original prompt
    (``h`` and 12 hex digits; a repeat of the same prompt adds ``-2``, ``-3``, ...). Unlike
    a position, it survives exclusions and edits, so labels stay with their prompt."""
    seen: Counter[str] = Counter()
    out = []
    for row in rows:
        if _has_id(row):
            out.append(str(row["id"]))
            continue
        h = "h" + hashlib.sha256(str(row.get("prompt") or "").encode()).hexdigest()[:12]
        seen[h] += 1
        out.append(h if seen[h] == 1 else f"{h}-{seen[h]}")
    return out


def legacy_ids(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The position keys that labels of rows without an ``id`` had, to their stable ids."""
    ids = stable_ids(rows)
    return {f"p{i:06d}": ids[i] for i, row in enumerate(rows) if not _has_id(row)}


def _latest(labels: list[dict[str, Any]], rename: dict[str, str]) -> list[dict[str, Any]]:
    """Labels with their legacy keys renamed; when a reviewer has labels under both keys of a
    record, the later one (``latest_labels`` is in save order) says."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for x in labels:
        x = {**x, "record_id": rename.get(x["record_id"], x["record_id"])}
        out.pop((x["record_id"], x["reviewer"]), None)
        out[(x["record_id"], x["reviewer"])] = x
    return list(out.values())


def dataset_labels(dataset: Path, db: RunDB) -> list[dict[str, Any]]:
    """Every reviewer's latest label of each record of ``dataset``, keyed by stable id (the
    dataset is read only when labels with legacy position keys need renaming)."""
    labels = db.latest_labels(RECORD)
    rename: dict[str, str] = {}
    if any(LEGACY_RECORD.fullmatch(x["record_id"]) for x in labels):
        rename = legacy_ids(read_rows(dataset))
    return _latest(labels, rename)


#: a record's fields shown elsewhere on the page; every other text field (the recipe's output
#: fields: reasoning, topics, rationales, whatever their names) is shown as reasoning
NOT_REASONING = {"id", "prompt", "cell", "annotations", "verified", "provenance", "strategy"}
FLAT_PREFIXES = ("cell_", "annotated_", "verified_", "provenance_")  # CSV and Parquet columns


def _record(rid: str, row: dict[str, Any]) -> dict[str, Any]:
    cell = row.get("cell") if isinstance(row.get("cell"), dict) else {}
    if not cell:
        cell = {k[5:]: v for k, v in row.items() if str(k).startswith("cell_") and v}
    notes = {
        k: v
        for k, v in row.items()
        if k not in NOT_REASONING
        and not str(k).startswith(FLAT_PREFIXES)
        and isinstance(v, str)
        and v.strip()
    }
    return {
        "id": rid,
        "prompt": str(row.get("prompt") or ""),
        "cell": cell,
        "annotations": row.get("annotations") or {},
        "reasoning": notes,
        "provenance": row.get("provenance") or {},
    }


def stratified_sample(
    records: list[dict[str, Any]], n: int, axis: str | None, seed: int = 0
) -> list[dict[str, Any]]:
    """``n`` records, spread evenly over the values of ``axis`` (round-robin over shuffled
    strata), or a plain seeded sample without one."""
    rng = random.Random(seed)
    if n >= len(records):
        return records
    if not axis:
        return sorted(rng.sample(records, n), key=lambda r: records.index(r))
    strata: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        strata[str(r["cell"].get(axis, ""))].append(r)
    for rs in strata.values():
        rng.shuffle(rs)
    out: list[dict[str, Any]] = []
    keys = sorted(strata)
    while len(out) < n:
        for k in keys:
            if strata[k] and len(out) < n:
                out.append(strata[k].pop())
    return out


@dataclass
class Review:
    dataset: Path
    records: list[dict[str, Any]]
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
            seen += [d for d in r["cell"] if d not in seen]
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
        ids = {r["id"] for r in self.records}
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
    records = [_record(rid, r) for rid, r in zip(stable_ids(rows), rows, strict=True)]
    if not records:
        raise UsageError(f"{dataset} holds no records to review")
    if stratify_by and not any(stratify_by in r["cell"] for r in records):
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


def paper_axis(dim: str) -> str | None:
    """The paper's axis that ``dim`` is (``policy_concepts`` -> "policy concept"), or None."""
    name = dim.casefold()
    return next((axis for key, axis in PAPER_AXES if key in name), None)


def fixed2(x: float | None) -> str:
    """A figure to two decimals, "-" when missing; never "-0.00"."""
    if x is None:
        return "-"
    text = f"{x:.2f}"
    return "0.00" if text == "-0.00" else text


def kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two raters' yes/no labels."""
    n = len(pairs)
    if not n:
        return None
    agree = sum(a == b for a, b in pairs) / n
    pa = sum(a for a, _ in pairs) / n
    pb = sum(b for _, b in pairs) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    # rounded off floating-point noise: a kappa of exactly 0 came out as -1e-17 ("-0.00")
    return round((agree - expected) / (1 - expected), 12) + 0.0 if expected < 1 else 1.0


def dim_state(label: dict[str, Any], dim: str) -> bool | None:
    """Does the prompt match its value of ``dim``: True, False, or None (not judged).

    The web form before three states had one checkbox per dimension, so an unticked box
    (stored False) could mean "not judged" as well as "does not": those labels (no ``form``
    key, the form's fields) count only their ticked boxes."""
    said = (label.get("dims") or {}).get(dim)
    if said is None:
        return None
    legacy_form = "form" not in label and {"flags", "note", "edit", "exclude"} <= label.keys()
    if legacy_form and said is False:
        return None
    return bool(said)


def dataset_figures(labels: list[dict[str, Any]], dims: list[str]) -> dict[str, Any]:
    """The good rate (Wilson 95%), per-dimension agreement over the judged labels only
    (matches or does not; "not judged" is left out), and agreement between reviewers on
    "good" (Cohen's kappa per pair of reviewers)."""
    judged = [x for x in labels if x.get("good") is not None]
    good = sum(1 for x in judged if x["good"])
    lo, hi = wilson(good, len(judged))
    per_dim = {}
    for d in dims:
        said = [s for s in (dim_state(x, d) for x in labels) if s is not None]
        per_dim[d] = {
            "matches": sum(1 for s in said if s),
            "n": len(said),
            "not_judged": len(labels) - len(said),
            "rate": sum(1 for s in said if s) / len(said) if said else None,
            "paper": PAPER_AGREEMENT.get(paper_axis(d) or ""),
        }
    by_reviewer: dict[str, dict[str, bool]] = defaultdict(dict)
    for x in judged:
        by_reviewer[x["reviewer"]][x["record_id"]] = bool(x["good"])
    reviewers = []
    for a, b in combinations(sorted(by_reviewer), 2):
        both = sorted(by_reviewer[a].keys() & by_reviewer[b].keys())
        pairs = [(by_reviewer[a][r], by_reviewer[b][r]) for r in both]
        reviewers.append(
            {
                "reviewers": [a, b],
                "n": len(pairs),
                "agreement": sum(x == y for x, y in pairs) / len(pairs) if pairs else None,
                "kappa": kappa(pairs),
            }
        )
    return {
        "reviewed": len({x["record_id"] for x in labels}),
        "labels": len(labels),
        "good": {
            "n": len(judged),
            "good": good,
            "rate": good / len(judged) if judged else None,
            "ci_low": lo,
            "ci_high": hi,
        },  # fmt: skip
        "dimensions": per_dim,
        # only the paper's axes that this recipe has
        "paper": {p: PAPER_AGREEMENT[p] for d in dims if (p := paper_axis(d)) is not None},
        "reviewer_agreement": reviewers,
    }


def verdict_figures(verdicts: list[dict[str, Any]], labels: list[dict[str, Any]]) -> dict[str, Any]:
    """Each judge against the people (``violates`` and ``safe`` labels; ``unsure`` left out):
    precision, recall, agreement and Cohen's kappa, overall and per axis value with at least
    MIN_N_PER_VALUE labelled prompts."""
    human: dict[str, bool] = {}
    for x in resolve_verdict_labels(verdicts, labels):  # several reviewers: the latest says
        if x.get("verdict") in ("violates", "safe"):
            human[x["record_id"]] = x["verdict"] == "violates"
    by_id = {verdict_id(r): r for r in verdicts}
    judges = sorted({j for r in verdicts for j in r["verdicts"]})
    out: dict[str, Any] = {"labelled": len(human), "judges": {}}
    for j in judges:
        rows = [
            (human[i], by_id[i]["verdicts"][j]["violates"], by_id[i]["cell"])
            for i in human
            if i in by_id and by_id[i]["verdicts"].get(j, {}).get("violates") is not None
        ]
        overall = _calibration([(h, bool(v)) for h, v, _ in rows])
        per_value: dict[str, dict[str, Any]] = {}
        for axis in sorted({a for _, _, cell in rows for a in cell}):
            for value in sorted({cell.get(axis) for _, _, cell in rows if cell.get(axis)}):
                sub = [(h, bool(v)) for h, v, cell in rows if cell.get(axis) == value]
                if len(sub) >= MIN_N_PER_VALUE:
                    per_value[f"{axis}={value}"] = _calibration(sub)
        out["judges"][j] = {**overall, "per_value": per_value}
    return out


def verdict_id(r: dict[str, Any]) -> str:
    """An attack record's id for labels: the prompt's dataset id (when the dataset has one),
    a hash of the prompt, and the strategy when not the control. Never its position, which
    moves when a record before it is excluded: a label stays with its prompt, and an edited
    prompt (a new response) needs a new one."""
    rid = str(r.get("id") or "")
    if rid == f"p{r['index']:06d}":  # the attack's position fallback for rows without an id
        rid = ""
    base = f"{rid}#{hashlib.sha256(str(r['prompt']).encode()).hexdigest()[:12]}"
    strategy = r.get("strategy", "identity")
    return base if strategy == "identity" else f"{base}:{strategy}"


def resolve_verdict_labels(
    verdicts: list[dict[str, Any]], labels: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Verdict labels with their legacy keys (index and strategy) renamed to ``verdict_id``,
    when exactly one of the attack's records has that index and strategy."""
    by_legacy: dict[str, list[str]] = defaultdict(list)
    for r in verdicts:
        strategy = r.get("strategy", "identity")
        key = f"{r['index']:06d}" + ("" if strategy == "identity" else f":{strategy}")
        by_legacy[key].append(verdict_id(r))
    rename = {k: v[0] for k, v in by_legacy.items() if len(set(v)) == 1}
    return _latest(labels, rename)


def _calibration(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    """(human, judge) pairs -> precision and recall of the judge's "violates", agreement,
    kappa, n."""
    tp = sum(1 for h, j in pairs if h and j)
    fp = sum(1 for h, j in pairs if not h and j)
    fn = sum(1 for h, j in pairs if h and not j)
    n = len(pairs)
    return {
        "n": n,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "agreement": sum(h == j for h, j in pairs) / n if n else None,
        "kappa": kappa(pairs),
    }


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
