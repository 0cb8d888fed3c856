"""Queueing is not failure: adaptive concurrency (AIMD), first-token and idle deadlines, and
usage that counts every call the server ran."""

from __future__ import annotations

import asyncio

import pytest
from conftest import wait_until

from aart.llm import GenerateConfig, Message, ModelOptions, get_model
from aart.llm.adaptive import AdaptiveLimit
from aart.testing import FakeOpenAIServer


def test_slow_start_then_additive_increase_up_to_the_ceiling():
    limit = AdaptiveLimit(8)
    assert limit.limit == 1

    async def go():
        for _ in range(30):
            epoch = await limit.acquire()
            limit.release(epoch, answered=True, ttft=0.1)

    asyncio.run(go())
    assert limit.limit == 8  # never above the ceiling
    assert [round(e.limit) for e in limit.events[:7]] == [2, 3, 4, 5, 6, 7, 8]


def test_congestion_halves_once_per_round_and_probes_ever_more_rarely():
    limit = AdaptiveLimit(8)
    limit.limit = 8.0

    async def answer(**signal):
        limit.release(await limit.acquire(), **signal)

    async def go():
        epochs = [await limit.acquire() for _ in range(8)]
        for e in epochs:  # eight answers of one round, all congested: one decrease
            limit.release(e, congested=True)
        assert limit.limit == 4
        await answer(congested=True)  # a new round, congested again
        assert limit.limit == 2
        # above the slow-start threshold growth is additive, after a wait that doubled
        # because load showed again below the level it first showed at
        await answer(answered=True, ttft=0.1)
        assert limit.limit == 2  # still waiting
        await answer(answered=True, ttft=0.1)
        assert limit.limit == 2.5
        for _ in range(3):
            await answer(congested=True)
        assert limit.limit == 1  # never below one
        waits = 0
        while limit.limit == 1:
            await answer(answered=True, ttft=0.1)
            waits += 1
        assert waits == 16  # 2, 4, 8, 16: one-at-a-time servers are probed rarely

    asyncio.run(go())


def test_a_growing_time_to_first_token_reads_as_queueing():
    limit = AdaptiveLimit(8)
    limit.limit = 6.0

    async def go():
        limit.release(await limit.acquire(), answered=True, ttft=0.5)  # unloaded
        limit.release(await limit.acquire(), answered=True, ttft=1.2)  # jitter within the slack
        assert limit.limit > 6
        before = limit.limit
        limit.release(await limit.acquire(), answered=True, ttft=5.0)  # waited behind others
        assert limit.limit == before / 2

    asyncio.run(go())


def test_an_error_or_a_cancellation_is_no_sign_either_way():
    limit = AdaptiveLimit(8)

    async def go():
        limit.release(await limit.acquire())  # neither answered nor congested

    asyncio.run(go())
    assert limit.limit == 1 and not limit.events and limit.in_flight == 0


def test_fixed_concurrency_never_moves():
    limit = AdaptiveLimit(8, adaptive=False)

    async def go():
        limit.release(await limit.acquire(), congested=True)

    asyncio.run(go())
    assert limit.limit == 8 and not limit.events


def run_calls(server, n, **opts):
    options = ModelOptions(
        base_url=server.base_url, backoff_base=0.05, backoff_max=0.2, max_retries=6, **opts
    )
    model = get_model("openai/fake", options, use_cache=False)

    async def go():
        try:
            return await asyncio.gather(
                *(
                    model.generate([Message("user", f"question {i}")], GenerateConfig(seed=i))
                    for i in range(n)
                ),
                return_exceptions=True,
            )
        finally:
            await model.aclose()

    outs = asyncio.run(go())
    return model, outs


def settled(server, model):
    """Wait until the server has computed every request the client sent, those the client
    gave up on included (state, not a pause: a loaded machine only makes it later)."""
    wait_until(
        lambda: server.ran >= len(server.requests) >= model.calls,
        "the server to compute every request it got",
    )
    return server


@pytest.fixture
def one_slot_server():
    """Like llama-cpp-python's server: one completion at a time, the others queue."""
    server = FakeOpenAIServer(latency=0.2, slots=1).start()
    yield server
    server.stop()


def test_adaptive_concurrency_keeps_a_one_slot_server_from_timing_out(one_slot_server):
    # at a fixed 16, the last of a round would wait 16 x 0.2 s, past the 3 s deadline; the
    # deadline leaves room for a loaded machine above the 6 x 0.2 s the adaptive limit allows
    model, outs = run_calls(one_slot_server, 16, concurrency=16, timeout=3.0)
    assert all(not isinstance(o, Exception) for o in outs)
    assert model.concurrency_limit.peak <= 6
    assert settled(one_slot_server, model).ran == model.calls == 16  # nothing computed twice


def test_fixed_concurrency_times_out_and_every_server_call_is_counted(one_slot_server):
    model, outs = run_calls(one_slot_server, 10, concurrency=8, timeout=1.5, adaptive=False)
    assert model.calls > 10  # queued requests timed out and were sent again ...
    # ... and each one the server computed is counted, with its (estimated) tokens
    assert model.calls == settled(one_slot_server, model).ran
    assert model.usage.prompt_tokens > 10 * 4


def test_a_stalled_stream_is_cut_by_the_idle_deadline_and_retried(fake_server):
    # the stall outlasts any wait the test would make: only a cut and a retry can answer
    fake_server.push({"stall": 600})
    model, outs = run_calls(fake_server, 1, idle_timeout=1.0, timeout=10)
    assert outs[0].text.startswith("fake answer")
    assert len(fake_server.requests) == 2 and model.calls == 2  # the stalled one counts


def test_a_long_answer_that_keeps_coming_is_not_cut(fake_server):
    # the whole answer takes longer than `timeout` (50 chunks 0.04 s apart: 2 s or more, the
    # more so on a loaded machine), but tokens keep coming, well within `idle_timeout`
    fake_server.token_delay = 0.04
    fake_server.push({"content": "x" * 400})
    model, outs = run_calls(fake_server, 1, timeout=1.0, idle_timeout=1.0)
    assert outs[0].text == "x" * 400 and model.calls == 1


def test_usage_is_counted_when_the_stream_reports_none(fake_server):
    fake_server.stream_usage = False  # as llama-cpp-python's server
    model, outs = run_calls(fake_server, 1)
    text = outs[0].text
    assert model.usage.completion_tokens == -(-len(text) // 8)  # one per chunk
    assert model.usage.prompt_tokens > 0


def test_without_streaming_the_timeout_bounds_the_whole_answer(fake_server):
    fake_server.push({"delay": 600})  # outlasts the test: only a retry can answer
    model, outs = run_calls(fake_server, 1, stream=False, timeout=2.0)
    assert not isinstance(outs[0], Exception)
    assert len(fake_server.requests) == 2
    assert "stream" not in fake_server.requests[0]


def test_a_server_that_interrupts_streams_is_probed_rarely(one_slot_server):
    # llama-cpp-python's server ends a stream early when another request waits for its slot
    one_slot_server.interrupt = True
    one_slot_server.latency = 0.02
    one_slot_server.token_delay = 0.005
    model, outs = run_calls(one_slot_server, 16, concurrency=8)
    assert all(not isinstance(o, Exception) for o in outs)
    assert all(o.finish_reason == "stop" for o in outs)  # complete answers only
    wasted = model.calls - 16
    assert 0 < wasted <= 5  # the probes upward, each one counted
    assert settled(one_slot_server, model).ran == model.calls
