"""Awaiting under a deadline without losing a cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], seconds: float | None) -> T:
    """``await aw``, raising TimeoutError after ``seconds`` (None: no deadline). Not
    ``asyncio.wait_for``: on Python 3.11 it returns the answer and drops a cancellation that
    lands in the same loop step (CPython gh-86296), so a Ctrl-C arriving with an answer was
    lost and the run went on. ``asyncio.timeout`` counts cancellations and never drops one."""
    async with asyncio.timeout(seconds):
        return await aw
