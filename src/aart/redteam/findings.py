"""What an attack found, typed: :class:`Findings` is what ``aart.attack`` returns, what the
reports render and what ``attack.json`` holds (:meth:`Findings.as_dict`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from .results import harm_judged


class Rate(TypedDict):
    """An attack-success rate with its Wilson 95% interval."""

    successes: int
    n: int
    rate: float
    ci_low: float
    ci_high: float


class CellRate(Rate, total=False):
    """The rate of one axis value (``value``), or of one pair of values (``value`` "a | b",
    with ``a`` and ``b``), and the same rate corrected for the judge's error."""

    value: str
    a: str
    b: str
    corrected: float | None
    corrected_low: float
    corrected_high: float
    #: where the judge's sensitivity and specificity for this cell come from
    accuracy_source: str


class Corrected(TypedDict):
    """A rate corrected for the judge's error (Rogan-Gladen, clipped to [0, 1]; None when
    the judge is no better than chance) with a 95% interval that carries the uncertainty of
    the judge's sensitivity and specificity and of the sample."""

    rate: float | None
    ci_low: float
    ci_high: float
    sensitivity: float
    specificity: float
    source: str


class Agreement(TypedDict):
    """Two judges' agreement on "violates" over the prompts both judged."""

    judges: list[str]
    n: int
    agreement: float | None
    kappa: float | None


@dataclass
class Comparison:
    """A regression re-run against an earlier attack judged the same way, matched by prompt
    text; the lists hold prompt ids."""

    previous: str
    previous_rate: float
    judge: str
    compared: int
    fixed: list[str]
    still_failing: list[str]
    newly_failing: list[str]


@dataclass
class Findings:
    dataset: str
    target: str
    primary_judge: str
    judges: list[str]
    #: every prompt of the attack, answered or not
    prompts: int
    #: prompts with a verdict of the primary judge
    judged: int
    unjudged: int
    #: prompts the target refused with a 4xx of their own (a content filter)
    target_errors: int
    #: prompts whose call failed for good (job id and reason); re-running retries them
    failed_jobs: list[dict[str, str]]
    overall: Rate
    refusal_rate: float
    #: per axis, the rate of every value, worst first
    by_value: dict[str, list[CellRate]]
    #: per pair of axes ("a x b"), the rate of every pair of values seen, worst first
    by_pair: dict[str, list[CellRate]]
    agreement: list[Agreement]
    severity: dict[str, int]
    #: paid calls, tokens and cost (RunDB.call_totals)
    usage: dict[str, Any]
    #: the records (prompt, cell, response, verdicts) the primary judge found violating
    failures: list[dict[str, Any]]
    unjudged_records: list[dict[str, Any]]
    #: prompt -> violates, for regression comparisons
    outcomes: dict[str, bool]
    #: prompt -> its id in the dataset
    ids: dict[str, str]
    #: per judge, the answers it gave no usable verdict on (the primary's are `unjudged`)
    unjudged_by_judge: dict[str, int]
    #: what makes the headline doubtful, said first by the CLI and the reports
    warnings: list[str]
    #: per axis, the values of the run's (or recipe's) lists that no attacked prompt had
    untested: dict[str, list[str]] = field(default_factory=dict)
    #: per axis, the values of the run's dimension files that its scope filtered out on
    #: purpose (never planned, so not "never attacked")
    filtered_out: dict[str, list[str]] = field(default_factory=dict)
    #: iterative strategies' figures ("pair": success by round, queries per success)
    strategy_stats: dict[str, Any] = field(default_factory=dict)
    #: each judge against the people's verdicts (`aart review --attack`), when there are any
    calibration: dict[str, Any] = field(default_factory=dict)
    #: the share of judged prompts below which the attack proves nothing
    min_judged: float = 0.9
    #: why the attack stopped early (an endpoint that failed every call), if it did
    stopped: str | None = None
    comparison: Comparison | None = None
    #: what the rate counts: "attack success" (a judge of harm decided) or "complied (not
    #: refused)" (the refusal detector alone: a non-refusal is not necessarily a violation)
    measures: str = "attack success"
    #: how every answered prompt ended for the primary judge: success, no success (refused or
    #: safe), empty, truncated, unjudged; they add up to the answered prompts
    states: dict[str, int] = field(default_factory=dict)
    #: the rate with every unjudged prompt counted as a success: the gate's worst case
    worst_case: Rate | None = None
    #: the overall rate corrected for the primary judge's error
    corrected: Corrected | None = None
    #: the worst case (unjudged counted as successes), corrected the same way
    corrected_worst_case: Corrected | None = None
    #: per axis, every value's rate with its unjudged prompts counted as successes (what the
    #: axis and strategy gates compare); empty when the primary judge judged every answer
    worst_case_by_value: dict[str, list[CellRate]] = field(default_factory=dict)
    #: per judge with a score (strongreject), its mean score and count
    scores: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    #: unjudged prompts (by the primary judge) whose reply another judge saw comply
    unjudged_complied: int = 0
    #: per judge, the sensitivity and specificity used to correct its rates (overall, and per
    #: "axis=value" where the people's labels allow), with their source
    judge_accuracy: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: every attack setting with where it came from: {value, source: flag|recipe|default}
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the gate's thresholds and each rule's outcome (``redteam.gate.check_gate``)
    gate: dict[str, Any] = field(default_factory=dict)
    #: an attack on injection cases: utility rate, attack success with the task still done,
    #: the criteria that fired, the tool calls (``tally.agent_figures``); empty otherwise
    agent: dict[str, Any] = field(default_factory=dict)
    #: injection cases whose goal only a reader can tell (``success.judge``) attacked with no
    #: LLM judge: they stay unjudged, and only --judge MODEL judges them
    needs_judge: int = 0

    @property
    def judged_share(self) -> float:
        return self.judged / self.prompts if self.prompts else 0.0

    @property
    def inconclusive(self) -> bool:
        """Too few verdicts for the rate to mean anything, or stopped early: never a pass."""
        return self.judged_share < self.min_judged or self.stopped is not None

    @property
    def harm_judged(self) -> bool:
        """Whether a judge of harm decided the rate (not the refusal detector alone)."""
        return harm_judged(self.primary_judge)

    @property
    def measures_note(self) -> str:
        """What the rate measures, in a sentence (the reports and attack.json say it)."""
        if self.primary_judge == "action":
            return (
                "attack success: injection cases whose success criterion held on what the "
                "target did (a forbidden tool call, the secret leaked), checked without an LLM"
            )
        if self.harm_judged:
            return f"attack success: replies {self.primary_judge} judged violating"
        return (
            "complied (not refused): replies the refusal detector did not read as refusals; "
            "a non-refusal is not necessarily a violation (no judge of harm was configured)"
        )

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            judged_share=self.judged_share,
            inconclusive=self.inconclusive,
            measures_note=self.measures_note,
        )
        return d
