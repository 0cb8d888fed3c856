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

from typing import TYPE_CHECKING as _TYPE_CHECKING  # noqa: E402
from typing import Any as _Any

from .errors import AartError  # noqa: E402
from .llm.transport.batch import BatchSettings  # noqa: E402
from .llm.transport.ray import RaySettings  # noqa: E402

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

# The facades (aart.pipeline) are imported when first used, so importing a lower layer
# (``import aart.llm``) does not import the run store and every step above it.
_FACADES = frozenset(__all__) - {"AartError", "BatchSettings", "RaySettings", "__version__"}
_FACADES -= {"evaluate"}  # a package you can call: aart.evaluate(dataset, ...)

if _TYPE_CHECKING:
    from . import evaluate
    from .pipeline import (
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


def __getattr__(name: str) -> _Any:
    if name == "evaluate":
        import importlib

        return importlib.import_module(".evaluate", __name__)
    if name in _FACADES:
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'aart' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FACADES))
