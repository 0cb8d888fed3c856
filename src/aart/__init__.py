"""aart: AI-assisted red-teaming with diverse, annotated adversarial data generation.

The Python API mirrors the CLI: :func:`run`, :func:`define`, :func:`scope`, :func:`generate`,
:func:`topup`, :func:`baseline`, :func:`evaluate`, :func:`attack`, :func:`rejudge`; batches
through a server's batch API with ``batch=BatchSettings(...)``, or through files with
:func:`batch_export`.
"""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("aart-redteam")
except _metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0"

from . import evaluate  # noqa: E402  (a package you can call: aart.evaluate(dataset, ...))
from .errors import AartError  # noqa: E402
from .llm.batch import BatchSettings  # noqa: E402
from .llm.ray_executor import RaySettings  # noqa: E402
from .pipeline import (  # noqa: E402
    BatchFiles,
    RunResult,
    attack,
    baseline,
    batch_export,
    define,
    dry_run,
    generate,
    rejudge,
    run,
    scope,
    topup,
    values,
)

__all__ = [
    "AartError",
    "BatchFiles",
    "BatchSettings",
    "RaySettings",
    "RunResult",
    "__version__",
    "attack",
    "baseline",
    "batch_export",
    "define",
    "dry_run",
    "evaluate",
    "generate",
    "rejudge",
    "run",
    "scope",
    "topup",
    "values",
]
