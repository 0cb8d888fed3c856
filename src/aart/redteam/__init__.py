"""Red-team the application: targets, judges, attack runs and findings by axis. The attack's
specification is ``aart.redteam.spec.AttackSpec``, its owner ``aart.redteam.session
.AttackSession``."""

from .attack import Attack
from .judges import GuardJudge, LLMJudge, RefusalJudge, Verdict
from .regression import compare_runs, write_regression_dataset
from .spec import AttackConfig
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
