"""A bounded worker pool: N workers pull from one iterator, so memory does not grow with the
number of pending jobs (unlike a gather over every job)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def run_pool(
    jobs: Iterable[T], worker: Callable[[T], Awaitable[None]], concurrency: int
) -> None:
    """Run ``worker`` over ``jobs`` with at most ``concurrency`` in flight. The first
    exception cancels the rest and propagates (finished jobs stay finished)."""
    it = iter(jobs)

    async def loop() -> None:
        for job in it:  # next() is synchronous, so workers never take the same job
            await worker(job)

    try:
        async with asyncio.TaskGroup() as tg:
            for _ in range(max(1, concurrency)):
                tg.create_task(loop())
    except* BaseException as group:
        raise group.exceptions[0] from None
