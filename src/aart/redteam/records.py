"""The attack's records as types, validated when read back and turned into plain lines only
where they are stored: a job's result in run.db (:class:`AttackRecord`, with each judge's
``judges.Verdict``), a line of failures.jsonl (:class:`RegressionRow`) and the summary a
baseline is read from (:class:`Baseline`). Field names are those of the files, so the files do
not change; fields a record does not hold stay out of it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from .judges import Verdict
from .strategies import IDENTITY

#: the verdict of a judge that gave none (a record judged before that judge was added)
UNJUDGED = Verdict(judge="", violates=None)


class AttackRecord(BaseModel):
    """One (prompt, strategy) of an attack: the job (index, id, prompt, cell, strategy) and
    what came back. ``verdicts`` is None for a target error (no reply to judge)."""

    model_config = ConfigDict(extra="allow")

    index: int
    id: str
    prompt: str
    cell: dict[str, Any] = {}
    strategy: str = IDENTITY
    target: str | None = None
    response: str | None = None
    sent: str | None = None
    response_english: str | None = None
    #: "length": the target stopped at --max-tokens
    finish_reason: str | None = None
    target_error: str | None = None
    #: an answer cut at aart's bound (see aart.llm.types.answer_limit)
    truncated: bool | None = None
    #: every judge's verdict (``judges.Verdict``, validated), by judge name
    verdicts: dict[str, Verdict] | None = None
    #: PAIR's rounds, Crescendo's turns
    chain: list[dict[str, Any]] | None = None
    transcript: list[dict[str, Any]] | None = None
    rounds: int | None = None
    queries: int | None = None
    #: an injection case (``aart.injection``, as the job carries it)
    case: dict[str, Any] | None = None
    #: what an agent did with it: every tool call, the steps, the criteria that fired, and
    #: whether the user's task was still done
    tool_calls: list[dict[str, Any]] | None = None
    steps: int | None = None
    trace: list[dict[str, Any]] | None = None
    max_steps_reached: bool | None = None
    criteria: list[str] | None = None
    utility: bool | None = None

    @classmethod
    def read(cls, raw: dict[str, Any]) -> AttackRecord:
        return cls.model_validate(raw)

    def dump(self) -> dict[str, Any]:
        """The plain record, with the fields it was given (the run.db line)."""
        return self.model_dump(exclude_unset=True)

    @property
    def answered(self) -> bool:
        return self.verdicts is not None

    def verdict(self, judge: str) -> Verdict:
        return (self.verdicts or {}).get(judge) or UNJUDGED

    def outcome_key(self) -> str:
        """A prompt under a strategy: the prompt alone for the control (as earlier versions
        kept it), else the strategy and the prompt."""
        return self.prompt if self.strategy == IDENTITY else f"[{self.strategy}] {self.prompt}"


class RegressionRow(BaseModel):
    """A line of failures.jsonl: a failing prompt in dataset format, with the strategy it
    failed under (none: the control of an attack without strategies), so a re-run replays
    the same transformation."""

    id: str
    prompt: str
    cell: dict[str, Any]
    annotations: dict[str, Any] = {}
    strategy: str | None = None
    #: an injection case's keys (user_task, context, injection, success...), kept so the
    #: regression set replays the same case
    case: dict[str, Any] | None = None

    @classmethod
    def of(cls, failure: dict[str, Any]) -> RegressionRow:
        strategy = failure.get("strategy", IDENTITY)
        case = failure.get("case")
        # an attack without strategies: plain dataset lines. With strategies (the cell holds
        # the strategy axis) the control says so too, so it is replayed as the control alone
        if strategy == IDENTITY and "strategy" not in failure["cell"]:
            return cls(id=failure["id"], prompt=failure["prompt"], cell=failure["cell"], case=case)
        cell = {k: v for k, v in failure["cell"].items() if k != "strategy"}
        return cls(
            id=failure["id"], prompt=failure["prompt"], cell=cell, strategy=strategy, case=case
        )

    def line(self) -> dict[str, Any]:
        out = self.model_dump(exclude_none=True, exclude={"case"})
        out.update(self.case or {})
        return out


class Baseline(BaseModel):
    """What a comparison reads of an earlier attack's attack.json."""

    model_config = ConfigDict(extra="allow")

    primary_judge: str | None = None
    overall: dict[str, Any]
    #: the judged prompts (``outcome_key``) and whether each succeeded
    outcomes: dict[str, bool] = {}
