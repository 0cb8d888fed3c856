"""The Model wrapper: cache, budget, concurrency, rate limits, accounting."""

import asyncio
import time

import pytest

from aart.errors import StructuredOutputError
from aart.llm import (
    Budget,
    BudgetExhausted,
    GenerateConfig,
    Message,
    Model,
    ModelOptions,
    Price,
    RateLimiter,
    ScriptedAPI,
    cache_key,
    get_model,
)
from aart.llm.providers.base import ModelAPI
from aart.llm.types import RawResponse, Usage
from aart.store.db import RunDB

MSGS = [Message("user", "hello")]


def scripted(responses, **opts):
    o = ModelOptions(backoff_base=0.001, **opts)
    api = ScriptedAPI("s", o, responses)
    return api, o


def test_cache_spends_no_second_call(tmp_path):
    db = RunDB(tmp_path / "run.db")
    api, o = scripted(['{"a": 1}'])
    model = Model("fake/s", api, options=o, store=db)
    schema = {"type": "object"}
    first = asyncio.run(model.generate(MSGS, GenerateConfig(seed=3), schema))
    again = Model("fake/s", api, options=o, store=db)
    second = asyncio.run(again.generate(MSGS, GenerateConfig(seed=3), schema))
    assert first.parsed == second.parsed == {"a": 1}
    assert len(api.calls) == 1 and second.cached and again.calls == 0
    # --no-cache bypasses it
    nocache = Model("fake/s", api, options=o, store=db, use_cache=False)
    asyncio.run(nocache.generate(MSGS, GenerateConfig(seed=3), schema))
    assert len(api.calls) == 2


def test_cache_key_covers_inputs():
    base = cache_key("e", MSGS, GenerateConfig(), None)
    assert base != cache_key("e", MSGS, GenerateConfig(temperature=0.1), None)
    assert base != cache_key("e", [Message("user", "other")], GenerateConfig(), None)
    assert base != cache_key("e", MSGS, GenerateConfig(), {"type": "object"})
    assert base != cache_key("f", MSGS, GenerateConfig(), None)


def test_usage_cost_and_budget():
    api, o = scripted(["x" * 400])
    budget = Budget(max_calls=2)
    model = Model("fake/s", api, options=o, price=Price(input=1.0, output=2.0), budget=budget)

    async def go():
        for _ in range(2):
            await model.generate(MSGS, GenerateConfig())
        await model.generate(MSGS, GenerateConfig())

    with pytest.raises(BudgetExhausted, match="re-run the same command"):
        asyncio.run(go())
    assert model.calls == 2 and budget.calls == 2
    assert model.usage.completion_tokens == 200
    assert model.cost == pytest.approx((model.usage.prompt_tokens * 1 + 200 * 2) / 1e6)


class CountingAPI(ModelAPI):
    def __init__(self):
        super().__init__("c", ModelOptions())
        self.active = self.peak = 0

    async def complete(self, messages, config, schema):
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1
        return RawResponse("ok", Usage(1, 1))


def test_concurrency_is_bounded():
    api = CountingAPI()
    model = Model("fake/c", api, options=ModelOptions(concurrency=3))

    async def go():
        await asyncio.gather(*(model.generate([Message("user", str(i))]) for i in range(20)))

    asyncio.run(go())
    assert api.peak == 3


@pytest.fixture
def fake_clock(monkeypatch):
    """time.monotonic and asyncio.sleep on a clock that sleeping advances; yields
    (now, slept)."""
    now = [1000.0]
    slept: list[float] = []

    async def fake_sleep(s):
        slept.append(s)
        now[0] += s

    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    return now, slept


def test_rate_limiter_waits_for_the_window(fake_clock):
    _, slept = fake_clock
    limiter = RateLimiter(rpm=2)

    async def go():
        for _ in range(3):
            await limiter.acquire(10)

    asyncio.run(go())
    assert slept == [60.0]


def test_tpm_limit_waits_for_the_window(fake_clock):
    now, slept = fake_clock
    limiter = RateLimiter(tpm=100)

    async def go():
        await limiter.acquire(60)
        now[0] += 15
        await limiter.acquire(30)  # 90 of 100: no wait
        await limiter.acquire(30)  # 120 > 100: waits until the first 60 leave the window

    asyncio.run(go())
    assert slept == [45.0]


def test_structured_retry_uses_new_seed():
    api, o = scripted(["not json", '{"ok": true}'])
    model = Model("fake/s", api, options=o)
    out = asyncio.run(model.generate(MSGS, GenerateConfig(seed=5), {"type": "object"}))
    assert out.parsed == {"ok": True} and model.failures == 1


def test_structured_failure_after_retries():
    api, o = scripted(["nope"], structured_retries=1)
    model = Model("fake/s", api, options=o)
    with pytest.raises(StructuredOutputError):
        asyncio.run(model.generate(MSGS, GenerateConfig(), {"type": "object"}))
    assert len(api.calls) == 2


def test_budget_is_reserved_before_the_concurrency_slot():
    """max_calls 5 with 20 concurrent callers makes exactly 5 calls."""
    budget = Budget(max_calls=5)
    model = get_model("fake/slow", ModelOptions(concurrency=20), budget=budget)

    async def one(i):
        await asyncio.sleep(0)
        try:
            await model.generate([Message("user", f"q{i}")], GenerateConfig(0.0, 8, i))
            return True
        except BudgetExhausted:
            return False

    async def main():
        return await asyncio.gather(*(one(i) for i in range(20)))

    results = asyncio.run(main())
    assert sum(results) == 5 and model.calls == 5 and budget.calls == 5
    assert budget.in_flight == 0


def test_the_same_request_in_flight_twice_is_paid_once(tmp_path):
    api = CountingAPI()
    db = RunDB(tmp_path / "run.db")
    model = Model("fake/c", api, options=ModelOptions(concurrency=4), store=db)

    async def go():
        return await asyncio.gather(
            *(model.generate(MSGS, GenerateConfig(seed=1)) for _ in range(4))
        )

    outs = asyncio.run(go())
    db.close()
    assert api.peak == 1 and model.calls == 1  # one paid call ...
    assert sum(o.cached for o in outs) == 3  # ... and three answers from it
