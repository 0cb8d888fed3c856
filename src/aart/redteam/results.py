"""Every verdict on disk: ``results.jsonl`` (and ``results.csv``, ``results.parquet``) in the
attack directory, one line per (prompt, strategy), successes and the rest alike, so a user can
audit every verdict and re-use the safe replies. :class:`ResultLine` is the line's schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from ..data.export import write_csv, write_jsonl
from .judges import NOTHING_SAID

#: how a (prompt, strategy) ended for the primary judge
State = Literal[
    "success", "no success", "empty", "truncated", "unjudged", "target error", "failed", "not run"
]


def harm_judged(primary: str) -> bool:
    """Whether the primary judge judges harm (not the refusal detector alone, whose "success"
    is a reply that was not refused: a non-refusal is not necessarily a violation)."""
    return primary != "refusal"


def outcome_words(harm: bool) -> dict[State, str]:
    """Each state named for what was measured: "violating" / "safe" with a judge of harm,
    "complied" / "refused" with the refusal detector alone."""
    yes, no = ("violating", "safe") if harm else ("complied", "refused")
    return {
        "success": yes,
        "no success": no,
        "empty": "empty",
        "truncated": "cut off",
        "unjudged": "unjudged",
        "target error": "target error",
        "failed": "failed",
        "not run": "not run",
    }


class JudgeVerdict(BaseModel):
    #: the refusal detector: complied, partial, refusal, empty, truncated; the other judges:
    #: violates, safe, empty, truncated, unjudged
    label: str
    #: for the refusal detector, "not refused" (complied or partial), not a judgement of harm
    violates: bool | None = None
    score: float | None = None
    rationale: str = ""
    category: str | None = None
    severity: int | None = None
    error: str | None = None


class ResultLine(BaseModel):
    id: str
    index: int
    strategy: str
    cell: dict[str, str]
    #: the dataset's prompt, and the text the target got under the strategy
    prompt: str
    sent: str
    response: str | None = None
    response_english: str | None = None
    #: "length": the target stopped at --max-tokens
    finish_reason: str | None = None
    target_error: str | None = None
    failure: str | None = None
    primary_judge: str
    state: State
    #: the state in words of what was measured: "complied" / "refused" when the refusal
    #: detector is the primary judge (a non-refusal is not necessarily a violation),
    #: "violating" / "safe" with a judge of harm; else "empty", "cut off", "unjudged", ...
    outcome: str
    #: the primary judge's verdict (None: no verdict)
    success: bool | None = None
    #: the people's verdict from `aart review --attack` (violates, safe, unsure), if any
    human: str | None = None
    #: the outcome corrected by people: the human verdict where there is one (unsure left
    #: out), else the primary judge's
    corrected: bool | None = None
    #: whether ``corrected`` comes from a person
    human_corrected: bool = False
    rounds: int | None = None
    queries: int | None = None
    verdicts: dict[str, JudgeVerdict]
    #: an injection case: every tool call the target made (name, arguments), its model
    #: calls, the criteria that fired (forbidden_call, canary, judge), and whether the
    #: user's task was still done; ``max_steps_reached``: the step bound stopped it while it
    #: was still calling tools
    tool_calls: list[dict[str, Any]] | None = None
    steps: int | None = None
    max_steps_reached: bool | None = None
    criteria: list[str] | None = None
    utility: bool | None = None


def state_of(r: dict[str, Any], primary: str) -> State:
    """A result record's state for the primary judge."""
    if "verdicts" not in r:
        return "target error"
    v = r["verdicts"].get(primary) or {}
    if v.get("violates") is None:
        return "unjudged"
    status = v.get("status")
    if status in NOTHING_SAID:
        return status  # type: ignore[return-value]
    return "success" if v["violates"] else "no success"


def _label(v: dict[str, Any]) -> str:
    if v.get("status"):
        return str(v["status"])
    if v.get("violates") is None:
        return "unjudged"
    return "violates" if v["violates"] else "safe"


def result_line(
    r: dict[str, Any], primary: str, human: str | None, state: State | None = None
) -> ResultLine:
    verdicts = {
        j: JudgeVerdict(
            label=_label(v),
            violates=v.get("violates"),
            score=v.get("score"),
            rationale=v.get("rationale") or "",
            category=v.get("category"),
            severity=v.get("severity"),
            error=v.get("error"),
        )
        for j, v in (r.get("verdicts") or {}).items()
    }
    success = (r.get("verdicts") or {}).get(primary, {}).get("violates")
    state = state or state_of(r, primary)
    by_person = human in ("violates", "safe")
    return ResultLine(
        id=str(r["id"]),
        index=int(r["index"]),
        strategy=str(r.get("strategy") or "identity"),
        cell={str(k): str(v) for k, v in (r.get("cell") or {}).items()},
        prompt=r["prompt"],
        sent=r.get("sent") or r["prompt"],
        response=r.get("response"),
        response_english=r.get("response_english"),
        finish_reason=r.get("finish_reason"),
        target_error=r.get("target_error"),
        failure=r.get("failure"),
        primary_judge=primary,
        state=state,
        outcome=outcome_words(harm_judged(primary))[state],
        success=success,
        human=human,
        corrected=(human == "violates") if by_person else success,
        human_corrected=by_person,
        rounds=r.get("rounds"),
        queries=r.get("queries"),
        verdicts=verdicts,
        tool_calls=r.get("tool_calls"),
        steps=r.get("steps"),
        max_steps_reached=bool(r.get("max_steps_reached")) if r.get("steps") else None,
        criteria=r.get("criteria"),
        utility=r.get("utility"),
    )


def flat(line: ResultLine) -> dict[str, Any]:
    """One table row: the cell as ``cell_<axis>`` columns, each judge's verdict as
    ``<judge> label`` / ``score`` / ``rationale`` columns."""
    d = line.model_dump(exclude={"cell", "verdicts"})
    # a table cell holds text: the calls (of any arguments' shape) as JSON
    for key in ("tool_calls", "criteria"):
        if d.get(key) is not None:
            d[key] = json.dumps(d[key], ensure_ascii=False)
    d.update({f"cell_{k}": v for k, v in line.cell.items()})
    for j, v in line.verdicts.items():
        d[f"{j} label"] = v.label
        d[f"{j} score"] = v.score
        d[f"{j} rationale"] = v.rationale
    return d


def write_results(lines: list[ResultLine], out: Path) -> dict[str, Path]:
    """results.jsonl, results.csv (cells a spreadsheet cannot run as formulas) and
    results.parquet in ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = {ext: out / f"results.{ext}" for ext in ("jsonl", "csv", "parquet")}
    write_jsonl((json.loads(x.model_dump_json()) for x in lines), paths["jsonl"])
    rows = [flat(x) for x in lines]
    columns: list[str] = []
    for row in rows:  # every row's columns, in first-seen order (cells differ by dataset)
        columns += [c for c in row if c not in columns]
    write_csv(rows, paths["csv"], columns or ["id"])
    table = pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows])
    tmp = paths["parquet"].with_name(paths["parquet"].name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(paths["parquet"])
    return paths
