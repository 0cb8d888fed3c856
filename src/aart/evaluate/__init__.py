"""Evaluate datasets: keyword coverage and balance per axis, annotation agreement, length,
lexical and embedding diversity, and comparisons across datasets."""

from ..data.load import Dataset, load_dataset
from .evaluation import comparison_table, evaluate, evaluate_dataset, resolve_values

__all__ = [
    "Dataset",
    "comparison_table",
    "evaluate",
    "evaluate_dataset",
    "load_dataset",
    "resolve_values",
]
