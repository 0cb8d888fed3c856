"""Secrets go only where the user bound them: recipes and target files are shared documents."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import MINI_RECIPE, write_recipe

from aart import pipeline
from aart.errors import EndpointDown
from aart.llm import endpoints
from aart.testing import FakeOpenAIServer

SECRET = "sk-user-SECRET-42"


@pytest.fixture
def other_server():
    """A second local server: the host a shared recipe points at."""
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


def recipe_to(tmp_path, url, key_env=None):
    models = f"default: openai/fake\n  base_url: {url}"
    if key_env:
        models += f"\n  api_key_env: {key_env}"
    return write_recipe(tmp_path, MINI_RECIPE.replace("default: fake/test", models))


def seen_secret(server) -> bool:
    return any(SECRET in " ".join(h.values()) for h in server.headers)


def test_a_recipe_cannot_send_a_named_secret_to_its_host(tmp_path, monkeypatch, other_server):
    monkeypatch.setenv("SOME_SECRET", SECRET)
    recipe = recipe_to(tmp_path, other_server.base_url, "SOME_SECRET")
    r = subprocess.run(
        [sys.executable, "-m", "aart", "run", str(recipe), "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "would send $SOME_SECRET to http://127.0.0.1:" in r.stderr
    assert f"aart endpoints allow http://127.0.0.1:{other_server.port} --key-env SOME_SECRET" in (
        r.stderr
    )
    assert not other_server.requests  # refused before any call

    # once the user binds it, the host gets it
    endpoints.allow(other_server.base_url, "SOME_SECRET")
    pipeline.run(recipe, out=tmp_path / "run")
    assert all(h["authorization"] == f"Bearer {SECRET}" for h in other_server.headers)


def test_the_users_openai_key_never_follows_a_recipe_elsewhere(
    tmp_path, monkeypatch, fake_server, other_server
):
    # the user's own endpoint and key ...
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # ... and a shared recipe that points at another host, naming no key
    result = pipeline.run(recipe_to(tmp_path, other_server.base_url), out=tmp_path / "run")
    assert result.stats.prompts == 18 and other_server.requests
    assert not seen_secret(other_server)  # sent without the key
    assert not any("authorization" in h for h in other_server.headers)

    # a recipe that names no host uses the user's, which gets the user's key
    plain = write_recipe(
        tmp_path, MINI_RECIPE.replace("default: fake/test", "default: openai/fake"), "plain.yaml"
    )
    pipeline.run(plain, out=tmp_path / "run2")
    assert fake_server.headers and all(
        h["authorization"] == f"Bearer {SECRET}" for h in fake_server.headers
    )


def test_a_base_url_the_user_gives_receives_the_openai_key(tmp_path, monkeypatch, other_server):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    recipe = recipe_to(tmp_path, "http://127.0.0.1:9/v1")  # the recipe's own, overridden
    pipeline.run(recipe, out=tmp_path / "run", base_url=other_server.base_url)
    assert other_server.headers and all(
        h["authorization"] == f"Bearer {SECRET}" for h in other_server.headers
    )


def test_a_401_from_a_host_without_the_key_says_how_to_bind_it(tmp_path, monkeypatch, other_server):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    other_server.on_text("", {"status": 401})
    with pytest.raises(EndpointDown, match="did not send .OPENAI_API_KEY.*aart endpoints allow"):
        pipeline.run(recipe_to(tmp_path, other_server.base_url), out=tmp_path / "run")
    assert not seen_secret(other_server)


def test_origins_and_bindings(tmp_path):
    assert endpoints.origin("HTTPS://API.Example.com/v1") == "https://api.example.com:443"
    assert endpoints.origin("http://h:8000/x") == "http://h:8000"
    assert endpoints.allowed("https://api.openai.com/v1", "OPENAI_API_KEY")
    assert not endpoints.allowed("https://api.openai.com.evil.test/v1", "OPENAI_API_KEY")
    assert not endpoints.allowed("http://h:8000", "K")
    endpoints.allow("http://h:8000/v1", "K")
    assert endpoints.allowed("http://h:8000/other", "K")
    assert not endpoints.allowed("http://h:8001", "K") and not endpoints.allowed(
        "https://h:8000", "K"
    )
    assert "sk-" not in endpoints.config_path().read_text()  # names only
    assert endpoints.forget("http://h:8000") == 1 and not endpoints.allowed("http://h:8000", "K")


def test_endpoints_cli(tmp_path):
    def aart(*args):
        return subprocess.run(
            [sys.executable, "-m", "aart", "endpoints", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    r = aart("allow", "http://gateway.internal:4000/v1", "--key-env", "GATEWAY_KEY")
    assert (
        r.returncode == 0
        and "$GATEWAY_KEY may now be sent to http://gateway.internal:4000" in r.stdout
    )
    r = aart("list")
    assert "http://gateway.internal:4000  $GATEWAY_KEY" in r.stdout
    assert "https://api.openai.com:443  $OPENAI_API_KEY" in r.stdout
    r = aart("forget", "http://gateway.internal:4000")
    assert r.returncode == 0 and "removed 1" in r.stdout


def attack_cli(tmp_path, target: str) -> subprocess.CompletedProcess[str]:
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(
        '{"id": "r0", "prompt": "a mild test prompt", "axes": {}, "annotations": {}}\n'
    )
    return subprocess.run(
        [sys.executable, "-m", "aart", "attack", str(dataset), "--target", target,
         "--out", str(tmp_path / "att")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    "url",
    [
        "http://${OPENAI_API_KEY}.invalid/chat",  # in the host: printed lower-cased before
        "http://app.invalid:8080/chat?key=${OPENAI_API_KEY}",  # in the query, to an unbound host
        "http://${OPENAI_API_KEY}@app.invalid/chat",  # as the user name
    ],
)
def test_a_target_url_never_prints_the_secret_it_expands(tmp_path, monkeypatch, url):
    secret = "sk-Fake-Secret-Value-0042"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    target = tmp_path / "target.yaml"
    target.write_text(f"url: {url}\n")
    r = attack_cli(tmp_path, str(target))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    out = r.stdout + r.stderr
    assert secret.lower() not in out.lower()
    assert "${OPENAI_API_KEY}" in out or "$OPENAI_API_KEY" in out


@pytest.fixture
def litellm_stub(monkeypatch):
    """A stand-in litellm module recording what each call would send."""
    import types

    calls: list[dict] = []

    async def acompletion(**kwargs):
        calls.append(kwargs)
        message = types.SimpleNamespace(content="ok")
        choice = types.SimpleNamespace(message=message, finish_reason="stop")
        return types.SimpleNamespace(choices=[choice], usage=None)

    module = types.ModuleType("litellm")
    module.acompletion = acompletion
    monkeypatch.setitem(sys.modules, "litellm", module)
    return calls


def test_a_gateway_bound_to_one_key_does_not_receive_another(tmp_path, monkeypatch, litellm_stub):
    import asyncio

    from aart.errors import ConfigError
    from aart.llm import GenerateConfig, Message
    from aart.recipe import load_recipe
    from aart.steps.common import model_options, preflight

    gateway = "http://gateway.invalid:4000/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", gateway)  # binds $OPENAI_API_KEY to the gateway
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-for-the-gateway")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    recipe = write_recipe(
        tmp_path,
        MINI_RECIPE.replace(
            "default: fake/test", f"default: litellm/anthropic/claude-x\n  base_url: {gateway}"
        ),
    )
    loaded = load_recipe(recipe).recipe
    with pytest.raises(ConfigError, match=r"would send \$ANTHROPIC_API_KEY to http://gateway"):
        preflight(loaded, None)
    with pytest.raises(ConfigError, match="allow http://gateway.invalid:4000 --key-env ANTHROPIC"):
        preflight(loaded, None)

    # bound by the user: the gateway gets that variable's value, and only it
    endpoints.allow(gateway, "ANTHROPIC_API_KEY")
    preflight(loaded, None)
    from aart.llm.providers.litellm import LiteLLMAPI

    api = LiteLLMAPI("anthropic/claude-x", model_options(loaded))
    asyncio.run(api.complete([Message("user", "hi")], GenerateConfig(), None))
    assert litellm_stub[-1]["api_key"] == SECRET and litellm_stub[-1]["api_base"] == gateway


def test_an_openai_model_through_litellm_uses_the_openai_binding(monkeypatch, litellm_stub):
    from aart.llm import ModelOptions
    from aart.llm.providers.litellm import LiteLLMAPI

    gateway = "http://gateway.invalid:4000/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", gateway)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    options = ModelOptions(base_url=gateway, untrusted=True, key_named=False)
    assert LiteLLMAPI("openai/gpt-x", options).key_env == "OPENAI_API_KEY"
    # a local server LiteLLM sends no key to needs no binding
    assert LiteLLMAPI("ollama/llama3", ModelOptions(base_url="http://h:1", untrusted=True,
                                                    key_named=False)).key_env is None  # fmt: skip


@pytest.mark.parametrize(
    "headers",
    [
        "{X-Api-Key: 98765432123456}",  # a number, not a string
        '{Cookie: {session: "XYZZYcookie98765432123456"}}',
        '{Authorization: ["Bearer sk-98765432123456"]}',
    ],
)
def test_a_target_file_error_never_prints_a_header_value(tmp_path, headers):
    # before: pydantic's message held the value, "input_value=98765432123456", on the
    # terminal and in CI logs
    from aart.errors import ConfigError
    from aart.redteam.targets import load_http_spec

    path = tmp_path / "target.yaml"
    path.write_text(
        "url: https://app.example.com/chat\n"
        f"headers: {headers}\n"
        'body: {message: "{{ prompt }}"}\n'
        "reply: $.text\n"
    )
    with pytest.raises(ConfigError) as e:
        load_http_spec(path)
    assert "98765432123456" not in str(e.value)
    assert "headers" in str(e.value) and "string" in str(e.value)


def test_a_server_that_echoes_the_key_in_its_error_never_gets_it_written(
    tmp_path, monkeypatch, other_server, capsys
):
    # some gateways quote the request's headers in an error body; aart quotes the body in its
    # message, run.db and reports: the key must be masked there, shown as ${OPENAI_API_KEY}
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    other_server.on_text(
        "", {"status": 400, "body": f"bad request (headers: authorization=Bearer {SECRET.lower()})"}
    )
    out = tmp_path / "run"
    with pytest.raises(Exception) as e:
        pipeline.run(recipe_to(tmp_path, "http://127.0.0.1:9/v1"), out=out,
                     base_url=other_server.base_url)  # fmt: skip
    assert seen_secret(other_server)  # it was sent: the user chose this host
    said = [str(e.value), capsys.readouterr().err]
    said += [p.read_bytes().decode("utf-8", "replace") for p in out.rglob("*") if p.is_file()]
    assert all(SECRET.lower() not in s.lower() for s in said)
    assert any("${OPENAI_API_KEY}" in s for s in said)


def test_redact_masks_every_remembered_secret_in_any_case_longest_first():
    from aart.redaction import redact, remember

    remember("APP_TOKEN", "tok-ABCDEF-1234")
    remember("APP_TOKEN_PREFIX", "tok-ABCDEF")  # contained in the other: the longer wins
    remember("SHORT", "abc")  # too short to mask without blotting out words
    text = "echo: Bearer TOK-abcdef-1234 and tok-abcdef alone; abc"
    assert redact(text) == "echo: Bearer ${APP_TOKEN} and ${APP_TOKEN_PREFIX} alone; abc"
