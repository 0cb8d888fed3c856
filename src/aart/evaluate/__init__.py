"""Evaluate datasets: keyword coverage and balance per axis, annotation agreement, length,
lexical and embedding diversity, and comparisons across datasets."""

import inspect
import sys
import types
import typing

from ..data.load import Dataset, load_dataset
from .evaluation import comparison_table, evaluate, evaluate_dataset, resolve_values


class _EvaluatePackage(types.ModuleType):
    """``aart.evaluate(dataset, ...)`` is the verb, :func:`aart.evaluate.evaluate`, while
    ``aart.evaluate`` stays this package (``import aart.evaluate.coverage`` still works)."""

    def __call__(self, *args: typing.Any, **kwargs: typing.Any) -> dict[str, typing.Any]:
        return evaluate(*args, **kwargs)

    # help() and inspect show evaluate's parameters (the first one is the module itself)
    __call__.__signature__ = inspect.signature(evaluate).replace(  # type: ignore[attr-defined]
        parameters=[
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY),
            *inspect.signature(evaluate).parameters.values(),
        ]
    )
    __call__.__doc__ = evaluate.__doc__


sys.modules[__name__].__class__ = _EvaluatePackage

__all__ = [
    "Dataset",
    "comparison_table",
    "evaluate",
    "evaluate_dataset",
    "load_dataset",
    "resolve_values",
]
