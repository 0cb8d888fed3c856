"""Malformed, endless and huge answers from an OpenAI-compatible server: each is that call's
failure (recorded with its reason) or an answer cut and said to be cut, never a crash; and a
stream without usage is counted with the server's tokenizer."""

import asyncio
import json

import pytest

import aart
from aart.errors import EndpointDown, ProviderError
from aart.llm import GenerateConfig, Message, ModelOptions, get_model
from aart.llm.types import answer_limit
from aart.store.db import RunDB
from aart.testing import FakeOpenAIServer


def opts(server, **kw):
    base = dict(base_url=server.base_url, max_retries=0, timeout=5, adaptive=False)
    base.update(kw)
    return ModelOptions(**base)


def generate(model, text="hello", max_tokens=50):
    async def go():
        try:
            return await model.generate([Message("user", text)], GenerateConfig(0.0, max_tokens))
        finally:
            await model.aclose()

    return asyncio.run(go())


def answer(body):
    return {"status": 200, "body": body}


MALFORMED = {
    "message not an object": (False, answer({"choices": [{"message": "hi"}]}), "message is str"),
    "usage not numeric": (
        False,
        answer(
            {
                "choices": [{"message": {"content": "hi"}}],
                "usage": {"prompt_tokens": "many", "completion_tokens": 1},
            }
        ),
        "usage.prompt_tokens is 'many'",
    ),
    "negative usage": (
        False,
        answer({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": -5}}),
        "usage.prompt_tokens is '-5'",
    ),
    "choices not a list": (False, answer({"choices": "none"}), "choices is 'none'"),
    "a list-valued stream event": (True, {"events": ["[1, 2]"]}, "an event is list"),
    "a stream line over the bound": (
        True,
        {"events": ["x" * (2 << 20)]},
        "a stream event over 1024 KB",
    ),
    "usage in a stream not an object": (
        True,
        {"events": ['{"choices": [], "usage": [3]}']},
        "usage is list",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_answers_fail_the_call_with_their_reason(fake_server, case):
    stream, action, reason = MALFORMED[case]
    fake_server.push(action)
    model = get_model("openai/fake", opts(fake_server, stream=stream), use_cache=False)
    with pytest.raises(ProviderError) as e:
        generate(model)
    assert reason in str(e.value)


def test_a_malformed_answer_fails_its_attack_job_only(fake_server, tmp_path):
    path = tmp_path / "dataset.jsonl"
    prompts = ["a poem about rule breaking", "a story about privacy leaks", "an email", "a memo"]
    path.write_text(
        "".join(json.dumps({"id": f"r{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts))
    )
    fake_server.on_text("privacy", {"events": ["[1, 2]"]})
    f = aart.attack(
        path, target="openai/app", out=tmp_path / "att", base_url=fake_server.base_url,
        system_prompt="s", min_judged=0,
    )  # fmt: skip
    assert f.judged == 3 and len(f.failed_jobs) == 1 and not f.stopped
    assert "an event is list" in f.failed_jobs[0]["reason"]
    assert (tmp_path / "att" / "report.md").exists()


def test_a_huge_answer_is_cut_and_said_to_be_cut(fake_server, tmp_path):
    fake_server.push({"content": "y" * 3_000_000})
    model = get_model("openai/fake", opts(fake_server, stream=False), use_cache=False)
    out = generate(model, max_tokens=400)
    assert out.truncated and len(out.text) == answer_limit(400)


def test_a_stream_that_never_ends_is_cut_by_size(fake_server):
    fake_server.push({"endless": True})
    model = get_model("openai/fake", opts(fake_server), use_cache=False)
    out = generate(model, max_tokens=400)
    assert out.truncated and len(out.text) == answer_limit(400)


def test_a_stream_that_never_ends_is_cut_by_time(fake_server):
    fake_server.token_delay = 0.02  # a token at a time, for ever
    fake_server.push({"endless": True})
    model = get_model("openai/fake", opts(fake_server, max_seconds=0.5), use_cache=False)
    out = generate(model, max_tokens=400)
    assert out.truncated and 0 < len(out.text) < answer_limit(400)
    assert out.finish_reason == "length"


def test_an_attack_stores_and_reports_a_huge_answer_cut(fake_server, tmp_path):
    path = tmp_path / "dataset.jsonl"
    path.write_text(json.dumps({"id": "r0", "prompt": "a story about privacy leaks"}) + "\n")
    fake_server.push({"content": "Sure. " + "z" * 3_000_000})
    out = tmp_path / "att"
    f = aart.attack(
        path, target="openai/app", out=out, base_url=fake_server.base_url, system_prompt="s"
    )
    assert any("1 of 1 responses were cut" in w for w in f.warnings)
    db = RunDB(out / "run.db")
    rec = next(db.records("attack"))
    db.close()
    assert rec["truncated"] and len(rec["response"]) == answer_limit(400)
    assert (out / "run.db").stat().st_size < 1_000_000
    assert (out / "report.html").stat().st_size < 1_000_000


def test_prompt_tokens_of_a_stream_without_usage_come_from_the_servers_tokenizer(fake_server):
    # llama-cpp-python's server: no usage in streams, a tokenizer at /extras/tokenize/count
    fake_server.stream_usage = False
    fake_server.tokenizer = True
    text = "a question about the weather, in plain words " * 10
    out = generate(get_model("openai/fake", opts(fake_server), use_cache=False), text)
    assert fake_server.tokenized and text in fake_server.tokenized[0]
    assert out.usage.prompt_tokens == len(fake_server.tokenized[0]) // 3 + 1


def test_without_a_tokenizer_the_estimate_stays(fake_server):
    fake_server.stream_usage = False
    model = get_model("openai/fake", opts(fake_server), use_cache=False)
    out = generate(model, "x" * 400)
    assert out.usage.prompt_tokens == 400 // 4 + 4
    assert model.api._tokenizer is False  # looked for once, not again


def test_a_stream_cut_mid_answer_is_named_for_what_it_is(fake_server):
    # llama-cpp-python drops a stream when another request arrives: the server is running
    fake_server.push({"cut": True})
    model = get_model("openai/fake", opts(fake_server), use_cache=False)
    with pytest.raises(ProviderError) as e:
        generate(model, "tell me a long story " * 3)
    assert "cut the stream after" in str(e.value) and "interrupts it" in str(e.value)
    assert "cannot reach" not in str(e.value) and "is the server running" not in str(e.value)


def test_while_another_request_is_in_flight_the_estimate_is_scaled_not_counted(fake_server):
    # llama-cpp-python interrupts a running stream for any request, its tokenizer's too
    from aart.llm.providers import openai
    from aart.llm.types import estimate_tokens

    fake_server.stream_usage = False
    fake_server.tokenizer = True
    model = get_model("openai/fake", opts(fake_server), use_cache=False)
    first, second = [Message("user", "a b c " * 60)], [Message("user", "d e f g " * 90)]

    async def go():
        try:
            a = await model.generate(first, GenerateConfig(0.0, 20))
            openai._ACTIVE[model.api.base_url] += 1  # another request of ours, running
            try:
                b = await model.generate(second, GenerateConfig(0.0, 20))
            finally:
                openai._ACTIVE[model.api.base_url] -= 1
            return a, b
        finally:
            await model.aclose()

    a, b = asyncio.run(go())
    assert len(fake_server.tokenized) == 1  # the second was not sent to the tokenizer
    ratio = a.usage.prompt_tokens / estimate_tokens(first)
    assert ratio != 1 and b.usage.prompt_tokens == round(estimate_tokens(second) * ratio)


def test_a_model_endpoint_that_redirects_is_not_followed(fake_server):
    with FakeOpenAIServer() as foreign:
        fake_server.push({"status": 307, "location": f"{foreign.base_url}/chat/completions"})
        model = get_model("openai/fake", opts(fake_server), use_cache=False)
        with pytest.raises(EndpointDown, match="redirects \\(HTTP 307\\) to http://127.0.0.1"):
            generate(model)
        assert not foreign.requests  # neither the prompt nor any header went there
