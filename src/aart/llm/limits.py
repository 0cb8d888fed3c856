"""Retry policy, rate limits, prices and budgets: the policies around every model call."""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import RuntimeFailure, TransientError
from .types import Usage

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    base: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, error: TransientError, rng: random.Random) -> float:
        """Exponential backoff with full jitter; a server's Retry-After wins when given
        (capped at ten minutes, so a broken header cannot hang a run)."""
        if error.retry_after is not None:
            return min(error.retry_after, 600.0)
        return rng.uniform(0, min(self.max_delay, self.base * 2**attempt))

    async def call(self, send: Callable[[], Awaitable[T]], rng: random.Random) -> T:
        """``send()``, tried again after :meth:`delay` while it raises TransientError, at
        most ``max_retries`` more times; then its last error. (Model calls follow the same
        policy in ``Model._call``, which also pays for each attempt.)"""
        attempt = 0
        while True:
            try:
                return await send()
            except TransientError as e:
                if attempt >= self.max_retries:
                    raise
                await asyncio.sleep(self.delay(attempt, e, rng))
                attempt += 1


class RateLimiter:
    """Requests-per-minute and tokens-per-minute over a sliding 60-second window."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        self.rpm, self.tpm = rpm, tpm
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._lock = asyncio.Lock()

    @property
    def active(self) -> bool:
        return bool(self.rpm or self.tpm)

    async def acquire(self, tokens: int) -> None:
        if not self.active:
            return
        async with self._lock:
            while True:
                now = time.monotonic()
                while self._requests and now - self._requests[0] >= 60:
                    self._requests.popleft()
                while self._tokens and now - self._tokens[0][0] >= 60:
                    self._tokens.popleft()
                used = sum(t for _, t in self._tokens)
                wait = 0.0
                if self.rpm and len(self._requests) >= self.rpm:
                    wait = 60 - (now - self._requests[0])
                if self.tpm and self._tokens and used + tokens > self.tpm:
                    wait = max(wait, 60 - (now - self._tokens[0][0]))
                if wait <= 0:
                    self._requests.append(now)
                    self._tokens.append((now, tokens))
                    return
                await asyncio.sleep(wait)


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens; ``batch_*`` through a batch API (None: the online
    price)."""

    input: float = 0.0
    output: float = 0.0
    batch_input: float | None = None
    batch_output: float | None = None

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.input + usage.completion_tokens * self.output) / 1e6

    def batch(self) -> Price:
        """The price of a request sent in a batch."""
        return Price(
            self.input if self.batch_input is None else self.batch_input,
            self.output if self.batch_output is None else self.batch_output,
        )

    @property
    def has_batch_price(self) -> bool:
        return self.batch_input is not None or self.batch_output is not None


class BudgetExhausted(RuntimeFailure):
    pass


@dataclass
class Budget:
    """Caps on paid calls, tokens and cost for a run (None means unlimited). ``spent`` starts
    from what earlier invocations of the same run already paid for."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    #: calls started but not yet paid for: counted against max_calls, so concurrent callers
    #: cannot all pass the check before any of them has spent
    in_flight: int = 0
    #: what the calls in flight may cost at most (their prompts and max_tokens), held
    #: against max_tokens and max_cost, so the calls in flight cannot overshoot them
    held_tokens: int = 0
    held_cost: float = 0.0
    #: how the user set each cap ("max_cost": "--max-cost"), for the message that it is
    #: spent; a cap not named here came from the recipe's ``budget:``
    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def resuming(
        cls,
        spent: dict[str, Any] | None,
        *,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        max_cost: float | None = None,
    ) -> Budget:
        """These caps, counting what earlier invocations of the same run already spent
        (``spent`` as :meth:`RunDB.call_totals` gives it; None: nothing yet)."""
        spent = spent or {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        return cls(
            max_calls=max_calls,
            max_tokens=max_tokens,
            max_cost=max_cost,
            calls=spent["calls"],
            tokens=spent["prompt_tokens"] + spent["completion_tokens"],
            cost=spent.get("priced_cost", spent["cost"]) or 0.0,  # None: unpriced calls
        )

    def reserve(self, tokens: int = 0, cost: float = 0.0) -> tuple[int, float]:
        """Check the caps and hold one call that may spend up to ``tokens`` and ``cost``;
        raise BudgetExhausted when a cap is reached or the call could pass it. Check and
        hold happen with no await between them, so under asyncio it is atomic. Returns the
        hold, to give to :meth:`spend` or :meth:`release`."""
        self.check(tokens, cost)
        self.in_flight += 1
        self.held_tokens += tokens
        self.held_cost += cost
        return tokens, cost

    def release(self, hold: tuple[int, float] = (0, 0.0)) -> None:
        """Give back a held call that was not paid for (a transport failure)."""
        self.in_flight = max(0, self.in_flight - 1)
        self.held_tokens = max(0, self.held_tokens - hold[0])
        self.held_cost = max(0.0, self.held_cost - hold[1])

    def check(self, tokens: int = 0, cost: float = 0.0) -> None:
        if self.max_calls is not None and self.calls + self.in_flight >= self.max_calls:
            raise BudgetExhausted(
                self._msg("max_calls", f"{self.calls} calls of {{}} {self.max_calls}")
            )
        if self.max_tokens is not None and (
            self.tokens >= self.max_tokens
            or self.tokens + self.held_tokens + tokens > self.max_tokens
        ):
            raise BudgetExhausted(
                self._msg(
                    "max_tokens",
                    f"{self.tokens} tokens spent, {self.held_tokens} held by the calls in "
                    f"flight, of {{}} {self.max_tokens}; the next call may take {tokens}",
                )
            )
        if self.max_cost is not None and (
            self.cost >= self.max_cost or self.cost + self.held_cost + cost > self.max_cost
        ):
            raise BudgetExhausted(
                self._msg(
                    "max_cost",
                    f"${self.cost:.4f} spent, ${self.held_cost:.4f} held by the calls in "
                    f"flight, of {{}} ${self.max_cost}; the next call may cost ${cost:.4f}",
                )
            )

    def _msg(self, cap: str, what: str) -> str:
        option = self.names.get(cap)
        if option:
            return (
                f"budget exhausted ({what.format(option)}); work done so far is saved: raise "
                f"{option} and re-run the same command to continue"
            )
        return (
            f"budget exhausted ({what.format(cap)}); work done so far is saved: raise "
            f"`budget:` in the recipe (its {cap}; or in the run directory's recipe.yaml) and "
            "re-run the same command to continue"
        )

    def room(self) -> int | None:
        """How many more calls the caps allow (None: no call cap); raises BudgetExhausted when
        none. A batch is paid as a whole, so it holds no more requests than this."""
        self.check()
        return None if self.max_calls is None else self.max_calls - self.calls - self.in_flight

    def spend(self, usage: Usage, cost: float, hold: tuple[int, float] = (0, 0.0)) -> None:
        self.release(hold)
        self.add(usage, cost)

    def add(self, usage: Usage, cost: float) -> None:
        """Count a call paid outside the reserve/spend pairing (a batch's answers)."""
        self.calls += 1
        self.tokens += usage.total_tokens
        self.cost += cost
