"""Regression and baseline: the failing prompts as a dataset to attack again
(failures.jsonl), and what changed since an earlier attack judged the same way."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ..data.export import write_jsonl
from ..errors import UsageError
from ..text.normalize import text_hash
from .findings import Comparison, Findings
from .records import Baseline, RegressionRow


def write_regression_dataset(findings: Findings, path: Path) -> int:
    """The failing prompts, in dataset format, to attack again after the application is
    fixed; each keeps its strategy, so a re-run replays the same transformation."""
    return write_jsonl((RegressionRow.of(r).line() for r in findings.failures), path)


def read_baseline(previous_dir: Path, judge: str) -> Baseline:
    """An earlier attack's summary, refused (before any call) when it was judged by another
    judge: the comparison would count the judges' differences as fixes."""
    prev_path = previous_dir / "attack.json"
    if not prev_path.exists():
        raise UsageError(
            f"{previous_dir} holds no attack.json; give the --out of an earlier attack"
        )
    try:
        prev = Baseline.model_validate_json(prev_path.read_text(encoding="utf-8"))
    except ValidationError as e:
        raise UsageError(
            f"{prev_path} is not an attack summary ({e.errors()[0]['msg']}); give the --out "
            "of an earlier attack"
        ) from None
    if prev.primary_judge != judge:
        raise UsageError(
            f"{previous_dir} was judged by {prev.primary_judge}, this attack by {judge}: "
            "the comparison would report the judges' differences as fixes. Attack again with "
            f"the baseline's judge (--judge {_judge_option(prev.primary_judge)}), or "
            "without --baseline"
        )
    return prev


def _judge_option(primary: str | None) -> str:
    # the action check is no --judge: it judges every injection case, whatever --judge says
    return (primary or "refusal").removeprefix("llm:")


def compare_runs(current: Findings, previous_dir: Path) -> Comparison:
    """What changed since an earlier attack: the ids of the prompts fixed, still failing and
    newly failing (matched by prompt text)."""
    prev = read_baseline(previous_dir, current.primary_judge)
    was = {text_hash(p): v for p, v in prev.outcomes.items()}
    now = {text_hash(p): bool(v) for p, v in current.outcomes.items()}
    ids = {text_hash(p): i for p, i in current.ids.items()}
    both = sorted(was.keys() & now.keys(), key=lambda k: ids[k])
    return Comparison(
        previous=str(previous_dir),
        previous_rate=prev.overall["rate"],
        judge=current.primary_judge,
        compared=len(both),
        fixed=[ids[k] for k in both if was[k] and not now[k]],
        still_failing=[ids[k] for k in both if was[k] and now[k]],
        newly_failing=[ids[k] for k in both if not was[k] and now[k]],
    )
