"""Datasets in from other tools, as the rows `aart evaluate` and `aart attack` read: a
promptfoo tests file (or a config with its tests) and a Hugging Face dataset folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import UsageError
from . import hf, promptfoo


def handles(path: Path) -> bool:
    path = Path(path)
    return path.is_dir() or promptfoo.is_tests_file(path)


def iter_rows(path: Path, size: int) -> Iterator[list[dict[str, Any]]]:
    path = Path(path)
    if path.is_dir():
        if not hf.is_folder(path):
            raise UsageError(
                f"{path} is a directory but not a Hugging Face dataset folder (README.md and "
                "data/*.parquet); give a dataset file, or the run's dataset.jsonl"
            )
        yield from hf.iter_rows(path, size)
        return
    chunk: list[dict[str, Any]] = []
    for row in promptfoo.iter_rows(path):
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
