"""A bounded worker pool (N workers pull from one iterator, so memory does not grow with the
number of pending jobs, unlike a gather over every job), and the job runner on top of it that
keeps one failing job from stopping the others."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, Protocol, TypeVar

from ..errors import Deferred, EndpointDown, Exported, ProviderError
from ..llm.limits import BudgetExhausted

log = logging.getLogger(__name__)


def say_stopping() -> None:
    """The note of a Ctrl-C, said at once (by the job runner, and by Step 1, which runs its
    calls itself)."""
    log.info(
        "stopping: calls in flight are cancelled and sent again on resume (an embedded "
        "model's call is waited for); finished work is kept"
    )


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

    await _concurrently(loop, concurrency)


async def _concurrently(loop: Callable[[], Coroutine[Any, Any, None]], n: int) -> None:
    """``n`` copies of ``loop`` at once; the first exception cancels the others and is
    raised as itself (not in an ExceptionGroup)."""
    try:
        async with asyncio.TaskGroup() as tg:
            for _ in range(max(1, n)):
                tg.create_task(loop())
    except* BaseException as group:
        raise group.exceptions[0] from None


def _stop_if_cancelled() -> None:
    """Raise CancelledError when this task was cancelled (a Ctrl-C) and a call it awaited
    swallowed that (a library's, or Python 3.11's wait_for when the answer came in the same
    loop step): the worker then takes no next job, so the Ctrl-C still stops the run."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class JobStore(Protocol):
    def claim_jobs(self, stage: str, n: int, ttl: float) -> list[tuple[str, dict[str, Any]]]: ...
    def renew_leases(self, ttl: float) -> None: ...
    def drop_leases(self) -> None: ...
    def others_leasing(self, stage: str) -> int: ...
    def fail_job(self, job_id: str, error: str) -> None: ...


class Rounds(Protocol):
    """What the runner needs of a batch transport (aart.llm.transport.batch) between rounds
    of jobs: the batch API's life cycle (submit, poll, adopt, import, pay) stays there."""

    export_to: Any

    async def resume(self) -> None: ...
    def queued(self) -> int: ...
    def exported(self) -> int: ...
    def export(self, path: Any) -> list[tuple[Any, str, int]]: ...
    async def flush(self) -> None: ...


#: a job's lease: renewed every third of it while the worker lives; a killed worker's jobs
#: go back at once on this machine, elsewhere when the lease runs out
LEASE_SECONDS = 60.0
#: how often a worker with nothing to take looks again while others still hold jobs
POLL_SECONDS = 0.2


async def run_jobs(
    db: JobStore,
    stage: str,
    worker: Callable[[tuple[str, dict[str, Any]]], Awaitable[None]],
    concurrency: int,
    batch: Rounds | None = None,
) -> int:
    """Run the jobs of ``stage``, taking them by lease, so any number of processes on the
    same run directory split them and none is done twice. Returns when no job is left to take
    and no other worker holds one (its results may call for more work). A job whose call
    fails for good is marked failed with its reason and the others go on (re-running retries
    it); an endpoint that is down or Ctrl-C stops them all (this worker's unfinished jobs
    are given back); a spent budget starts no more jobs, lets the calls in flight finish and
    is raised then. Returns how many jobs failed.

    With ``batch``, calls without an answer yet are queued and their jobs wait: the queued
    requests go out as batches and the jobs run again once the answers are in, until none
    waits (or, when the queue exports, :class:`Exported` is raised after the first round)."""
    if batch is None:
        return await _run_round(db, stage, worker, concurrency)
    await batch.resume()  # answers to import, batches an earlier invocation submitted
    failed = 0
    while True:
        failed += await _run_round(db, stage, worker, concurrency)
        if batch.export_to is not None and (batch.queued() or batch.exported()):
            waiting = batch.exported()
            raise Exported(batch.export(batch.export_to), waiting)
        if not batch.queued():
            return failed
        await batch.flush()


async def _run_round(
    db: JobStore,
    stage: str,
    worker: Callable[[tuple[str, dict[str, Any]]], Awaitable[None]],
    concurrency: int,
) -> int:
    failed = 0
    taken: deque[tuple[str, dict[str, Any]]] = deque()
    #: a spent budget: no job is started after it, the calls in flight finish (and are paid
    #: for and kept), then it is raised
    spent: list[BudgetExhausted] = []

    async def take() -> tuple[str, dict[str, Any]] | None:
        while True:
            _stop_if_cancelled()
            if spent:
                return None
            if taken:
                return taken.popleft()
            batch = db.claim_jobs(stage, max(1, concurrency), LEASE_SECONDS)
            if batch:
                taken.extend(batch)
                continue
            if not db.others_leasing(stage):
                return None
            await asyncio.sleep(POLL_SECONDS)

    async def loop() -> None:
        nonlocal failed
        while (job := await take()) is not None:
            try:
                await worker(job)
            except Deferred:
                pass  # its call waits for a batch: the job stays leased until the round ends
            except BudgetExhausted as e:
                spent.append(e)  # this job is given back (pending) when the leases drop
                return
            except EndpointDown as e:
                if e.own:  # this job's call was the last straw: it failed, as the others did
                    db.fail_job(job[0], str(e)[:500])
                raise
            except ProviderError as e:
                db.fail_job(job[0], str(e)[:500])
                failed += 1

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(LEASE_SECONDS / 3)
            db.renew_leases(LEASE_SECONDS)

    beat = asyncio.create_task(heartbeat())
    try:
        await _concurrently(loop, concurrency)
    except asyncio.CancelledError:
        # Ctrl-C: said at once. HTTP calls in flight are cancelled (their answers never
        # arrive, so a resume sends them again); an embedded model's call runs in a thread
        # that cannot be cut short, and is waited for, which can take half a minute
        say_stopping()
        raise
    finally:
        beat.cancel()
        db.drop_leases()
    if spent:
        raise spent[0]
    return failed
