"""Moved to :mod:`aart.data.export`; this name stays so old imports keep working."""

from ..data.export import (  # noqa: F401
    csv_safe,
    iter_jsonl,
    read_jsonl,
    utf8_lines,
    write_csv,
    write_jsonl,
    write_parquet,
)

__all__ = [
    "csv_safe",
    "iter_jsonl",
    "read_jsonl",
    "utf8_lines",
    "write_csv",
    "write_jsonl",
    "write_parquet",
]
