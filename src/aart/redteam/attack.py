"""The names of the attack as earlier versions had them: the attack is now
:class:`~.session.AttackSession` over an :class:`~.spec.AttackSpec`; its jobs are in
``jobs``, its figures and warnings in ``tally``, failures.jsonl and the baseline in
``regression``, the read-only openers of an earlier attack in ``replay``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .findings import Findings
from .jobs import STAGE, attack_records, job_id, selected, strategy_list
from .regression import compare_runs, read_baseline, write_regression_dataset
from .replay import SAVED_FIELDS, attack_dataset, saved_responses
from .session import AttackSession
from .spec import AttackConfig, AttackSpec
from .tally import (
    KAPPA_WARNING,
    MIN_PAIRS,
    NON_REFUSAL,
    judge_scores,
    judge_warnings,
    outcome_key,
    state_warnings,
    strategy_stats,
    truncation_warnings,
)


class Attack(AttackSession):
    """An attack opened as earlier versions opened it: ``Attack(dataset, out, config)``,
    then ``await attack.run(tick)`` for the findings and ``close()``."""

    def __init__(self, dataset: str | Path, out: str | Path, config: AttackSpec) -> None:
        super().__init__(config.model_copy(update={"dataset": str(dataset)}), out)
        self.open()

    async def run(self, progress: Callable[[], None] | None = None) -> Findings:  # type: ignore[override]
        return await self._attack(progress)


__all__ = [
    "KAPPA_WARNING", "MIN_PAIRS", "NON_REFUSAL", "SAVED_FIELDS", "STAGE", "Attack",
    "AttackConfig", "AttackSession", "AttackSpec", "attack_dataset", "attack_records",
    "compare_runs", "job_id", "judge_scores", "judge_warnings", "outcome_key", "read_baseline",
    "saved_responses", "selected", "state_warnings", "strategy_list", "strategy_stats",
    "truncation_warnings", "write_regression_dataset",
]  # fmt: skip
