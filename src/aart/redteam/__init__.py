"""Red-team the application: targets, judges, attack runs and findings by axis."""

from .attack import Attack, AttackConfig, compare_runs, write_regression_dataset
from .judges import GuardJudge, LLMJudge, RefusalJudge, Verdict
from .targets import create_target

__all__ = [
    "Attack",
    "AttackConfig",
    "GuardJudge",
    "LLMJudge",
    "RefusalJudge",
    "Verdict",
    "compare_runs",
    "create_target",
    "write_regression_dataset",
]
