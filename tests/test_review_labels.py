"""Review labels without a browser: stable ids, export rules, labels.csv, figures."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from aart.evaluate.human import verdict_figures, verdict_id
from aart.review import open_review
from aart.store.db import RunDB


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def mild_rows(n: int = 4, ids: bool = True) -> list[dict]:
    rows = []
    for i in range(n):
        row = {"prompt": f"a mild test prompt number {i}", "cell": {"concepts": f"c{i % 2}"}}
        rows.append({"id": f"r{i}", **row} if ids else row)
    return rows


def exported(review) -> list[dict]:
    return [json.loads(x) for x in review.export()["dataset"].read_text().splitlines()]


def test_a_dataset_without_ids_keeps_its_exclusions_and_edits(tmp_path):
    """Issue 18.10: without an `id` column the export matched no label."""
    dataset = write_rows(tmp_path / "d.jsonl", mild_rows(ids=False))
    review = open_review(dataset, reviewer="ana")
    first, second = review.records[1].id, review.records[2].id
    assert first.startswith("h") and first != second
    review.label_record(first, {"exclude": True})
    review.label_record(second, {"edit": "an edited mild prompt"})
    kept = exported(review)
    review.close()
    assert [r["prompt"] for r in kept] == [
        "a mild test prompt number 0", "an edited mild prompt", "a mild test prompt number 3"
    ]  # fmt: skip
    assert kept[1]["provenance"]["edited"]["original"] == "a mild test prompt number 2"


def test_ids_stay_with_their_prompt_when_rows_move(tmp_path):
    rows = mild_rows(ids=False)
    review = open_review(write_rows(tmp_path / "d.jsonl", rows), reviewer="ana")
    review.label_record(review.records[2].id, {"good": False})
    review.close()
    # the same file with its first row gone: the label stays with its prompt
    review = open_review(write_rows(tmp_path / "d.jsonl", rows[1:]), reviewer="ana")
    labels = review.mine("record")
    assert [r.prompt for r in review.records if r.id in labels] == [rows[2]["prompt"]]
    review.close()


def test_position_keyed_labels_of_earlier_versions_are_resolved(tmp_path):
    dataset = write_rows(tmp_path / "d.jsonl", mild_rows(ids=False))
    db = RunDB(dataset.with_suffix(".review.db"), lock=False)
    db.add_label("record", "p000001", "ana", {"exclude": True})
    db.close()
    review = open_review(dataset, reviewer="ana")
    assert list(review.mine("record")) == [review.records[1].id]
    assert len(exported(review)) == 3
    review.close()


def test_verdict_labels_follow_the_prompt_not_its_position():
    """Issue 18.10: a verdict label keyed by dataset position moved to another prompt once
    a record before it was excluded."""

    def rec(index, rid, prompt, violates):
        return {"index": index, "id": rid, "prompt": prompt, "cell": {"concepts": "c"},
                "strategy": "identity", "verdicts": {"j": {"violates": violates}}}  # fmt: skip

    before = [rec(0, "a", "pa", False), rec(1, "b", "pb", True)]
    labels = [{"record_id": verdict_id(before[1]), "reviewer": "ana", "verdict": "violates"}]
    after = [rec(0, "b", "pb", True), rec(1, "c", "pc", False)]  # "a" excluded
    assert verdict_id(after[0]) == verdict_id(before[1]) != verdict_id(after[1])
    judge = verdict_figures(after, labels)["judges"]["j"]
    assert judge["n"] == 1 and judge["agreement"] == 1.0
    # rows without an id (the attack's position fallback) are keyed by their text
    assert verdict_id(rec(3, "p000003", "pb", True)) == verdict_id(rec(0, "p000000", "pb", True))
    # a label of an earlier version, keyed by index, is resolved
    legacy = [{"record_id": "000001", "reviewer": "ana", "verdict": "violates"}]
    assert verdict_figures(before, legacy)["judges"]["j"]["n"] == 1


def test_export_applies_every_reviewers_labels(tmp_path):
    """Issue 18.5: `--export` applied only the exporting reviewer's labels and so undid
    another reviewer's exclusion."""
    dataset = write_rows(tmp_path / "d.jsonl", mild_rows(5))
    for who, labels in (
        ("ana", {"r0": {"exclude": True}, "r1": {"edit": "ana's mild edit"}, "r3": {"exclude": True}}),
        ("ben", {"r0": {"good": True, "exclude": False}, "r1": {"edit": "ben's mild edit"},
                 "r2": {"edit": "ben's other edit"}}),
    ):  # fmt: skip
        review = open_review(dataset, reviewer=who)
        for rid, data in labels.items():
            review.label_record(rid, data)
        review.close()
    review = open_review(dataset, reviewer="ana")
    review.label_record("r3", {"exclude": False})  # ana reverts her own exclusion
    review.close()
    review = open_review(dataset, reviewer="cy", sample=2)  # a reviewer with no labels
    kept = {r["id"]: r for r in exported(review)}
    line = review.applied_line()
    review.close()
    assert sorted(kept) == ["r1", "r2", "r3", "r4"]  # ana's exclusion holds, ben's "no" too
    assert kept["r1"]["prompt"] == "ben's mild edit"  # the latest edit wins
    assert kept["r1"]["provenance"]["edited"] == {
        "by": "ben", "version": 1, "original": "a mild test prompt number 1",
        "other_edits_by": ["ana"],
    }  # fmt: skip
    assert kept["r2"]["prompt"] == "ben's other edit"
    assert line.startswith("applied the latest labels of 2 reviewers (ana, ben): 1 excluded")


def test_the_cli_export_says_whose_labels_it_applied(tmp_path):
    from click.testing import CliRunner

    from aart.cli.main import cli

    dataset = write_rows(tmp_path / "d.jsonl", mild_rows(3))
    review = open_review(dataset, reviewer="ben")
    review.label_record("r0", {"exclude": True})
    review.close()
    result = CliRunner().invoke(cli, ["review", str(dataset), "--export", "--reviewer", "ana"])
    assert result.exit_code == 0, result.output
    assert "applied the latest labels of 1 reviewer (ben): 1 excluded" in result.output
    assert len((tmp_path / "dataset.reviewed.jsonl").read_text().splitlines()) == 2


def test_a_kappa_of_zero_prints_as_0_00(tmp_path):
    """Issue 18.25: `kappa -0.00` (floating-point noise around 0)."""
    from aart.evaluate.evaluation import human_review
    from aart.evaluate.human import fixed2, kappa
    from aart.report.evaluation import _human_lines

    assert kappa([(False, False), (True, False), (True, False)]) == 0.0
    assert fixed2(-0.001) == "0.00" and fixed2(None) == "-" and fixed2(-0.5) == "-0.50"
    dataset = write_rows(tmp_path / "d.jsonl", mild_rows(3))
    for who, goods in (("ana", [False, True, True]), ("ben", [False, False, False])):
        review = open_review(dataset, reviewer=who)
        for rid, good in zip(("r0", "r1", "r2"), goods, strict=True):
            review.label_record(rid, {"good": good})
        review.close()
    assert "reviewers ana vs ben: kappa 0.00 (n=3)" in _human_lines(human_review(dataset))


def test_the_papers_figures_only_beside_the_axes_a_recipe_has(tmp_path):
    """Issue 18.25: a recipe with none of the paper's axes was compared with its concept,
    region and format figures."""
    from aart.evaluate.evaluation import human_review
    from aart.evaluate.human import dataset_figures
    from aart.report.evaluation import _human_lines

    labels = [{"record_id": "r0", "reviewer": "ana", "good": True,
               "dims": {"risks": True, "regions": True}}]  # fmt: skip
    figures = dataset_figures(labels, ["risks", "interactions"])
    assert figures["paper"] == {} and figures["dimensions"]["risks"]["paper"] is None
    figures = dataset_figures(labels, ["policy_concepts", "risks", "regions", "task_formats"])
    assert figures["paper"] == {"policy concept": 0.992, "region": 0.967, "task format": 0.85}
    assert figures["dimensions"]["regions"]["paper"] == 0.967
    rows = [{"id": "r0", "prompt": "a mild test", "cell": {"risks": "x", "interactions": "y"}}]
    dataset = write_rows(tmp_path / "d.jsonl", rows)
    review = open_review(dataset)
    review.label_record("r0", {"good": True, "dims": {"risks": True}})
    review.close()
    lines = " ".join(_human_lines(human_review(dataset)))
    assert "92.5%" in lines and "policy concept" not in lines and "region" not in lines


def test_labels_csv_has_plain_values_and_iso_times(tmp_path):
    """Issue 18.25: labels.csv had Python reprs ({'concepts': True}, ['unclear']) and epoch
    times."""
    dataset = write_rows(tmp_path / "d.jsonl", mild_rows(2))
    review = open_review(dataset, reviewer="ana")
    review.label_record("r0", {"good": True, "dims": {"concepts": False}, "form": 2,
                               "flags": ["unclear", "off-policy"], "note": "=a mild note",
                               "edit": None, "exclude": False})  # fmt: skip
    review.export()
    review.close()
    with (tmp_path / "labels.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1
    row = rows[0]
    assert row["kind"] == "record" and row["record_id"] == "r0" and row["reviewer"] == "ana"
    assert row["good"] == "true" and row["exclude"] == "false" and row["edit"] == ""
    assert row["match_concepts"] == "false" and row["flags"] == "unclear; off-policy"
    assert row["note"] == "'=a mild note"  # a formula stays text
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["created_at"]), row
    assert "form" not in row and "dims" not in row


def test_a_record_with_a_malformed_cell_is_refused_with_its_place(tmp_path):
    """A record's nested objects are validated where the review reads them: a cell value
    that is a list is a one-line error naming the file and the record, not a traceback."""
    import pytest

    from aart.errors import UsageError

    rows = mild_rows(3)
    rows[2]["cell"] = {"concepts": ["c0", "c1"]}
    dataset = write_rows(tmp_path / "d.jsonl", rows)
    with pytest.raises(UsageError) as e:
        open_review(dataset, reviewer="ana")
    said = str(e.value)
    assert said.startswith(f"{dataset}: record 3: `cell.concepts` is a list, not a string")
    assert said.endswith("fix the record") and "\n" not in said


def test_review_records_are_typed(tmp_path):
    rows = mild_rows(2)
    rows[0]["provenance"] = {"model": "fake/test", "round": 1, "job_id": "j", "seed": 3}
    rows[0]["why_prompt_harmful"] = "a mild reason"
    review = open_review(write_rows(tmp_path / "d.jsonl", rows), reviewer="ana")
    first, second = review.records
    assert first.cell == {"concepts": "c0"} and first.reasoning == {
        "why_prompt_harmful": "a mild reason"
    }
    assert first.provenance_shown() == {"model": "fake/test", "round": 1, "job_id": "j"}
    assert second.provenance_shown() == {}  # a record without provenance shows none
    review.close()
