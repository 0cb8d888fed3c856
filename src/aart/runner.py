"""A bounded worker pool (N workers pull from one iterator, so memory does not grow with the
number of pending jobs, unlike a gather over every job), and the job runner on top of it that
keeps one failing job from stopping the others."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

from .errors import EndpointDown, ProviderError

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


class JobStore(Protocol):
    def pending_jobs(self, stage: str) -> Iterable[tuple[str, dict[str, Any]]]: ...
    def fail_job(self, job_id: str, error: str) -> None: ...


async def run_jobs(
    db: JobStore,
    stage: str,
    worker: Callable[[tuple[str, dict[str, Any]]], Awaitable[None]],
    concurrency: int,
) -> int:
    """Run the pending jobs of ``stage``. A job whose call fails for good is marked failed
    with its reason and the others go on (re-running retries it); an endpoint that is down,
    a spent budget or Ctrl-C stops them all. Returns how many jobs failed."""
    failed = 0

    async def guarded(job: tuple[str, dict[str, Any]]) -> None:
        nonlocal failed
        try:
            await worker(job)
        except EndpointDown:
            raise
        except ProviderError as e:
            db.fail_job(job[0], str(e)[:500])
            failed += 1

    await run_pool(db.pending_jobs(stage), guarded, concurrency)
    return failed
