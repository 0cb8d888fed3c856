"""The OpenAI-compatible provider against a real HTTP server on 127.0.0.1."""

import asyncio
import time

import pytest

from aart.errors import ConfigError, ProviderError, StructuredOutputError
from aart.llm import GenerateConfig, Message, ModelOptions, get_model
from aart.store.db import RunDB

SCHEMA = {
    "type": "object",
    "properties": {
        "values": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}
    },
    "required": ["values"],
}
MSGS = [Message("user", "List two mild example values.")]


def opts(server, **kw):
    base = dict(base_url=server.base_url, backoff_base=0.01, backoff_max=0.05, timeout=5)
    base.update(kw)
    return ModelOptions(**base)


def gen(model, schema=SCHEMA, **kw):
    async def go():
        try:
            return await model.generate(MSGS, GenerateConfig(max_tokens=50, seed=1), schema, **kw)
        finally:
            await model.aclose()  # the HTTP session belongs to this event loop

    return asyncio.run(go())


def test_structured_answer_and_usage(fake_server):
    out = gen(get_model("openai/fake", opts(fake_server)))
    assert len(out.parsed["values"]) == 2
    assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
    req = fake_server.requests[0]
    assert req["response_format"]["type"] == "json_schema"
    assert req["seed"] == 1 and req["max_tokens"] == 50


def test_429_retry_after_is_honoured(fake_server):
    fake_server.push({"status": 429, "retry_after": 1})
    t = time.perf_counter()
    out = gen(get_model("openai/fake", opts(fake_server)))
    assert time.perf_counter() - t >= 0.9
    assert out.parsed and fake_server.served == 1 and len(fake_server.requests) == 2


@pytest.mark.parametrize("fault", [{"status": 500}, {"status": 503}, {"drop": True}])
def test_transient_errors_are_retried(fake_server, fault):
    fake_server.push(fault, fault)
    out = gen(get_model("openai/fake", opts(fake_server)))
    assert out.parsed and len(fake_server.requests) == 3


def test_slow_response_times_out_then_succeeds(fake_server):
    fake_server.push({"delay": 600})  # outlasts the test: only the retry can answer
    out = gen(get_model("openai/fake", opts(fake_server, timeout=2)))
    assert out.parsed and len(fake_server.requests) == 2


def test_gives_up_after_max_retries(fake_server):
    fake_server.push(*[{"status": 500}] * 5)
    with pytest.raises(ProviderError, match="gave up after 3 attempts"):
        gen(get_model("openai/fake", opts(fake_server, max_retries=2)))


@pytest.mark.parametrize(
    "content",
    [
        '{"values": ["a", "b"',  # truncated
        '```json\n{"values": ["a", "b"]}\n```',  # code fence
        '<think>let me think {about it}</think>{"values": ["a", "b"]}',  # reasoning preamble
    ],
)
def test_messy_answers_are_parsed(fake_server, content):
    fake_server.push({"content": content})
    assert gen(get_model("openai/fake", opts(fake_server))).parsed == {"values": ["a", "b"]}


def test_invalid_answers_retried_and_recorded(fake_server, tmp_path):
    db = RunDB(tmp_path / "run.db")
    fake_server.push(
        {"content": "I'm sorry, I can't help with that."}, {"content": '{"values": []}'}
    )
    out = gen(get_model("openai/fake", opts(fake_server), store=db))
    assert len(out.parsed["values"]) == 2
    failures = db.failed_calls()
    assert [f["raw_text"] for f in failures] == [
        "I'm sorry, I can't help with that.",
        '{"values": []}',
    ]


def test_refusal_everywhere_raises_with_raw_text(fake_server):
    fake_server.push(*[{"content": "I cannot assist with that."}] * 3)
    with pytest.raises(StructuredOutputError) as e:
        gen(get_model("openai/fake", opts(fake_server, structured_retries=2)))
    assert "cannot assist" in e.value.raw_text


def test_response_format_fallback(fake_server):
    fake_server.reject_formats = {"json_schema"}
    model = get_model("openai/fake", opts(fake_server))
    fake_server.push({"content": '{"values": ["a", "b"]}'})
    out = gen(model)
    assert out.parsed == {"values": ["a", "b"]}
    assert [r.get("response_format", {}).get("type") for r in fake_server.requests] == [
        "json_schema",
        "json_object",
    ]
    # the schema travels as instructions once the server will not take it natively
    assert "JSON Schema" in fake_server.requests[-1]["messages"][0]["content"]
    fake_server.reject_formats = {"json_schema", "json_object"}
    fake_server.push({"content": '{"values": ["c", "d"]}'})
    assert gen(model).parsed == {"values": ["c", "d"]}
    assert "response_format" not in fake_server.requests[-1]


def test_llama_cpp_500_for_json_schema_falls_back_to_json_object_with_schema(fake_server):
    # llama-cpp-python's server answers json_schema with HTTP 500 (a validation error)
    fake_server.reject_formats = {"json_schema"}
    fake_server.reject_status = 500
    model = get_model("openai/fake", opts(fake_server, max_retries=5))
    fake_server.push({"content": '{"values": ["a", "b"]}'}, {"content": '{"values": ["c", "d"]}'})
    assert gen(model).parsed == {"values": ["a", "b"]}
    first, second = fake_server.requests
    assert first["response_format"]["type"] == "json_schema"
    # no retries of the rejected format: straight to json_object with the schema
    assert second["response_format"] == {"type": "json_object", "schema": SCHEMA}
    gen(model)  # the working mode is remembered for the run
    assert fake_server.requests[2]["response_format"]["type"] == "json_object"
    assert len(fake_server.requests) == 3


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 4096 tokens",
        "Invalid prompt: flagged by our content policy (invalid_prompt)",
    ],
)
def test_per_request_rejections_never_downgrade_the_format(fake_server, message):
    fake_server.push({"status": 400, "body": {"error": {"message": message}}})
    model = get_model("openai/fake", opts(fake_server))
    with pytest.raises(ProviderError, match="HTTP 400"):
        gen(model)
    assert model.api.mode == "json_schema"
    assert [r["response_format"]["type"] for r in fake_server.requests] == ["json_schema"]


def test_free_decoding_sends_no_response_format(fake_server):
    model = get_model("openai/fake", opts(fake_server, decoding="free"))
    fake_server.push({"content": '{"values": ["a", "b"]}'})
    assert gen(model).parsed == {"values": ["a", "b"]}
    req = fake_server.requests[0]
    assert "response_format" not in req and "JSON Schema" in req["messages"][0]["content"]


def test_api_key_sent_but_never_stored(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-123")
    db = RunDB(tmp_path / "run.db")
    fake_server.push({"status": 500})
    gen(get_model("openai/fake", opts(fake_server), store=db))
    assert fake_server.headers[0]["authorization"] == "Bearer sk-test-SECRET-123"
    db.close()
    for f in tmp_path.iterdir():
        assert b"SECRET" not in f.read_bytes()


def test_missing_api_key_names_the_fix():
    with pytest.raises(ConfigError, match="export OPENAI_API_KEY"):
        get_model("openai/gpt-4o-mini")


def test_unreachable_endpoint_is_reported():
    model = get_model(
        "openai/x",
        ModelOptions(base_url="http://127.0.0.1:9/v1", max_retries=1, backoff_base=0.01, timeout=2),
    )
    with pytest.raises(ProviderError, match="cannot reach http://127.0.0.1:9/v1"):
        gen(model)


def test_unknown_provider_and_bad_name():
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        get_model("nope/model")
    with pytest.raises(ConfigError, match="provider/model"):
        get_model("gpt-4o")
