"""Rows read a chunk at a time (``itertools.batched`` arrives with Python 3.12)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def chunked(rows: Iterable[T], size: int) -> Iterator[list[T]]:
    """``rows`` as lists of ``size`` (the last one shorter); nothing for no rows."""
    chunk: list[T] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
