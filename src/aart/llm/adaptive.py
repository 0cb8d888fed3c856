"""Adaptive concurrency per endpoint (AIMD, as TCP does): queueing is not failure.

A server that runs one request at a time (llama-cpp-python's) queues the others; at a fixed
concurrency of 8 a request waits for seven others, runs past its deadline, and is retried while
the server still computes the original. So the number of requests in flight adapts:

- it starts at 1 and grows by one per answer (slow start, doubling per round) up to the first
  sign of load, then by one per round of answers (additive increase), never above
  ``models.concurrency``;
- it halves (multiplicative decrease) on a 429, on a request that got no first token in time,
  on a stream the server cut short for another request, and when the time to the first token
  grows well beyond the unloaded time (the request queued); at most once per round, since the
  answers of one round saw the same load;
- each time load shows again at the same level, it waits twice as many answers before probing
  upward again (so a one-request-at-a-time server is probed rarely, not every other call).

With ``models.adaptive: false`` the concurrency is fixed at ``models.concurrency``.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from dataclasses import dataclass

SLOW_START = 1
MAX_PROBE_WAIT = 64
#: the time to the first token counts as queueing above FACTOR x the unloaded time + SLACK
#: (the slack keeps a fast API's jitter from reading as load)
QUEUE_FACTOR = 3.0
QUEUE_SLACK = 0.25
#: a smaller growth ends slow start without a decrease (as HyStart does in TCP), so the
#: doubling stops before the queue is deep
SLOW_START_EXIT = 1.5
SLOW_START_SLACK = 0.1
BASELINE_WINDOW = 50


@dataclass
class LimitEvent:
    at: float
    limit: float
    why: str


class AdaptiveLimit:
    def __init__(self, ceiling: int, adaptive: bool = True) -> None:
        self.ceiling = max(1, ceiling)
        self.adaptive = adaptive
        self.limit = float(min(self.ceiling, SLOW_START) if adaptive else self.ceiling)
        self.threshold = float(self.ceiling)  # slow start ends here, or at the first decrease
        self.in_flight = 0
        self.peak = 0
        self._epoch = 0  # bumped by each decrease: older answers saw the old load
        self._ttfts: deque[float] = deque(maxlen=BASELINE_WINDOW)
        self._good = 0  # answers without a sign of load since the last decrease
        self._probe_wait = 1  # answers to wait for before growing again
        self._bad_level: int | None = None  # where load showed last
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.events: list[LimitEvent] = []

    async def acquire(self) -> int:
        """Wait for a slot; returns the epoch to hand back to :meth:`release`."""
        while self.in_flight >= int(self.limit):
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                raise
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        return self._epoch

    def release(
        self,
        epoch: int,
        *,
        answered: bool = False,
        congested: bool = False,
        ttft: float | None = None,
    ) -> None:
        """Give the slot back with what the call showed: ``answered`` (with its time to the
        first token, when streamed), ``congested`` (a 429, no first token in time, a stream
        cut short), or neither (another error, a cancellation: no sign either way)."""
        self.in_flight -= 1
        if self.adaptive:
            if congested:
                self._decrease(epoch, "congestion")
            elif answered and ttft is not None and self._queued(ttft):
                self._decrease(epoch, f"queueing (first token after {ttft:.1f}s)")
            elif answered:
                self._increase()
        self._wake()

    def _queued(self, ttft: float) -> bool:
        """Whether ``ttft`` shows queueing (and, growing already, whether to end slow start)."""
        base = min(self._ttfts) if self._ttfts else None
        self._ttfts.append(ttft)
        if base is None:
            return False
        if self.limit < self.threshold and ttft > SLOW_START_EXIT * base + SLOW_START_SLACK:
            self.threshold = self.limit
        return ttft > QUEUE_FACTOR * base + QUEUE_SLACK

    def _increase(self) -> None:
        self._good += 1
        if self.limit >= self.ceiling or self._good < self._probe_wait:
            return
        step = 1.0 if self.limit < self.threshold else 1.0 / self.limit
        self.limit = min(float(self.ceiling), self.limit + step)
        self.events.append(LimitEvent(time.monotonic(), self.limit, "increase"))

    def _decrease(self, epoch: int, why: str) -> None:
        if epoch != self._epoch:
            return  # this call started before the last decrease: already accounted for
        self._epoch += 1
        level = int(self.limit)
        if self._bad_level is not None and level <= self._bad_level:
            self._probe_wait = min(MAX_PROBE_WAIT, self._probe_wait * 2)
        else:
            self._probe_wait = 1
        self._bad_level = level
        self._good = 0
        self.limit = max(1.0, self.limit / 2)
        self.threshold = self.limit
        self.events.append(LimitEvent(time.monotonic(), self.limit, why))

    def _wake(self) -> None:
        free = int(self.limit) - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1


# One limit per server and event loop, shared by every model on that server (a target and a
# judge on the same llama.cpp server share its one slot).
_LIMITS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, AdaptiveLimit]] = (
    weakref.WeakKeyDictionary()
)


def limit_for(server: str, ceiling: int, adaptive: bool) -> AdaptiveLimit:
    """The limit of ``server`` in the running event loop (created on first use)."""
    per_loop = _LIMITS.setdefault(asyncio.get_running_loop(), {})
    key = f"{server}|{ceiling}|{adaptive}"
    if key not in per_loop:
        per_loop[key] = AdaptiveLimit(ceiling, adaptive)
    return per_loop[key]
