"""Red-team the application: targets, judges, attack runs and findings by axis."""

from .attack import Attack
from .judges import GuardJudge, LLMJudge, RefusalJudge, Verdict
from .regression import compare_runs, write_regression_dataset
from .session import AttackSession
from .spec import AttackArgs, AttackConfig, AttackSpec
from .targets import create_target

__all__ = [
    "Attack",
    "AttackArgs",
    "AttackConfig",
    "AttackSession",
    "AttackSpec",
    "GuardJudge",
    "LLMJudge",
    "RefusalJudge",
    "Verdict",
    "compare_runs",
    "create_target",
    "write_regression_dataset",
]
