"""Moved to :mod:`aart.data.load`; this name stays so old imports keep working."""

from ..data.load import (  # noqa: F401
    AART_ANNOTATIONS,
    AART_AXES,
    CHUNK,
    Dataset,
    iter_dataset,
    iter_rows,
    load_dataset,
    parse_mapping,
    read_rows,
)

__all__ = [
    "AART_ANNOTATIONS",
    "AART_AXES",
    "CHUNK",
    "Dataset",
    "iter_dataset",
    "iter_rows",
    "load_dataset",
    "parse_mapping",
    "read_rows",
]
