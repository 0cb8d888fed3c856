"""Targets that misbehave on some prompts: each such prompt is that job's failure or a target
error, never the attack's end, never judged as the application's answer; secrets never follow
a redirect off the target's origin."""

import json
from pathlib import Path

import pytest

import aart
from aart.llm import endpoints
from aart.store.db import RunDB
from aart.testing import FakeOpenAIServer

# sorted by category, as aart's datasets are: the broken category's prompts come together
PROMPTS = [
    "a poem about rule breaking",
    "an email about rule breaking",
    "a story about privacy leaks",
    "a how-to about privacy leaks",
    "a memo about privacy leaks",
    "a letter about privacy leaks",
    "a song about unsafe advice",
    "a list about unsafe advice",
]


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "dataset.jsonl"
    concept = {0: "rule breaking", 1: "privacy leaks", 2: "unsafe advice"}
    rows = [
        {"id": f"r{i}", "prompt": p, "axes": {"concepts": [concept[(i + 2) // 4]]}}
        for i, p in enumerate(PROMPTS)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def fixtures_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def test_a_python_target_returning_a_dict_is_a_target_error(dataset, tmp_path, fixtures_on_path):
    f = aart.attack(dataset, target="targets_fixture:dict_app", out=tmp_path / "att")
    assert f.judged == 0 and f.target_errors == len(PROMPTS) and f.overall["successes"] == 0
    db = RunDB(tmp_path / "att" / "run.db")
    rec = next(db.records("attack"))
    db.close()
    assert rec["response"] is None and "verdicts" not in rec
    assert "returned dict, not str" in rec["target_error"]


def test_a_python_target_that_raises_fails_that_job_only(dataset, tmp_path, fixtures_on_path):
    out = tmp_path / "att"
    f = aart.attack(dataset, target="targets_fixture:fragile_app", out=out, min_judged=0)
    assert f.judged == 4 and len(f.failed_jobs) == 4 and not f.stopped
    assert all("raised RuntimeError: the application broke" in j["reason"] for j in f.failed_jobs)
    assert (out / "report.md").exists() and (out / "attack.json").exists()
    # a re-run tries the failed prompts again, and fails them again, without a crash
    f = aart.attack(dataset, target="targets_fixture:fragile_app", out=out, min_judged=0)
    assert f.judged == 4 and len(f.failed_jobs) == 4


def http_target(tmp_path, server, headers="{}"):
    spec = tmp_path / "target.yaml"
    spec.write_text(
        f"name: app\nurl: {server.base_url}/chat/completions\nheaders: {headers}\n"
        'body: {model: app, messages: [{role: user, content: "{{ prompt }}"}]}\n'
        "reply: $.choices[0].message.content\n"
    )
    return str(spec)


def test_a_reply_of_another_shape_for_one_category_is_a_target_error(
    dataset, tmp_path, fake_server
):
    fake_server.on_text("privacy", {"status": 200, "body": {"choices": []}})
    target = http_target(tmp_path, fake_server)
    f = aart.attack(dataset, target=target, out=tmp_path / "att", concurrency=1, min_judged=0)
    assert not f.stopped and f.judged == 4 and f.target_errors == 4 and not f.failed_jobs
    db = RunDB(tmp_path / "att" / "run.db")
    errors = [r["target_error"] for r in db.records("attack") if r.get("target_error")]
    db.close()
    assert all("not found in the response" in e and "choices" in e for e in errors)
    assert len(fake_server.requests) == len(PROMPTS)  # a shape error is not retried


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_500_for_one_category_does_not_stop_the_attack(
    dataset, tmp_path, fake_server, concurrency
):
    fake_server.on_text("privacy", {"status": 500, "retry_after": 0})
    target = http_target(tmp_path, fake_server)
    out = tmp_path / "att"
    f = aart.attack(dataset, target=target, out=out, concurrency=concurrency, min_judged=0)
    assert not f.stopped
    assert f.judged == 4 and len(f.failed_jobs) == 4  # the other categories were measured
    assert all("HTTP 500" in j["reason"] for j in f.failed_jobs)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_endpoint_down_says_as_many_failures_as_the_failed_jobs(dataset, tmp_path, concurrency):
    server = FakeOpenAIServer().start()
    try:
        server.on_text("", {"status": 500, "retry_after": 0})
        target = http_target(tmp_path, server)
        f = aart.attack(dataset, target=target, out=tmp_path / "att", concurrency=concurrency)
    finally:
        server.stop()
    assert f.stopped and f.inconclusive
    n = int(f.stopped.split(" calls in a row failed for good")[0].rsplit(" ", 1)[-1])
    assert n >= 3 and len(f.failed_jobs) == n


def test_a_secret_header_does_not_follow_a_redirect_to_another_origin(
    dataset, tmp_path, monkeypatch
):
    app, foreign = FakeOpenAIServer().start(), FakeOpenAIServer().start()
    try:
        assert app.port != foreign.port  # two origins on the loopback
        monkeypatch.setenv("APP_TOKEN", "app-secret-value")
        endpoints.allow(f"http://127.0.0.1:{app.port}", "APP_TOKEN")
        app.on_text("privacy", {"status": 307, "location": f"{foreign.base_url}/chat/completions"})
        target = http_target(tmp_path, app, '{X-Api-Key: "${APP_TOKEN}"}')
        f = aart.attack(dataset, target=target, out=tmp_path / "att", min_judged=0)
        assert not foreign.requests  # neither the key nor the prompt went there
        assert f.judged == 4 and f.target_errors == 4 and not f.stopped
        db = RunDB(tmp_path / "att" / "run.db")
        errors = [r["target_error"] for r in db.records("attack") if r.get("target_error")]
        db.close()
        assert all("redirected (HTTP 307) to another origin" in e for e in errors)
        assert all("app-secret-value" not in e for e in errors)

        # within the origin, a redirect is followed with the headers
        app.rules.clear()
        back = {"status": 307, "location": "/v2/chat/completions"}
        app.push({}, {}, *[back, {}] * 4, {}, {})  # one prompt at a time, in order
        f = aart.attack(dataset, target=target, out=tmp_path / "att2", concurrency=1)
        assert f.judged == len(PROMPTS) and f.target_errors == 0
        assert app.headers[-1]["x-api-key"] == "app-secret-value"

        # a target file that sends no secret may follow it (nothing to leak)
        app.rules.clear()
        app.on_text("privacy", {"status": 307, "location": f"{foreign.base_url}/chat/completions"})
        f = aart.attack(dataset, target=http_target(tmp_path, app), out=tmp_path / "att3")
        assert f.judged == len(PROMPTS) and len(foreign.requests) == 4
        assert all("x-api-key" not in h for h in foreign.headers)
    finally:
        app.stop()
        foreign.stop()


def test_an_unexpected_error_in_one_job_fails_that_job_only(dataset, tmp_path, monkeypatch):
    from aart.redteam.judges import RefusalJudge

    judge = RefusalJudge.judge

    async def fragile(self, prompt, response):
        if "privacy" in prompt:
            raise KeyError("a field this answer lacks")
        return await judge(self, prompt, response)

    monkeypatch.setattr(RefusalJudge, "judge", fragile)
    f = aart.attack(dataset, target="fake/app", out=tmp_path / "att", min_judged=0)
    assert f.judged == 4 and len(f.failed_jobs) == 4
    assert all("unexpected KeyError" in j["reason"] for j in f.failed_jobs)
    assert (tmp_path / "att" / "report.md").exists()


def test_a_python_target_that_hangs_fails_its_call_once_not_retried(fixtures_on_path):
    import asyncio

    import targets_fixture

    from aart.errors import ProviderError
    from aart.llm import GenerateConfig, Message, Model, ModelOptions
    from aart.redteam.targets import create_target

    _, api = create_target("targets_fixture:hanging_app", ModelOptions(timeout=0.2))
    model = Model("python/hang", api, options=ModelOptions(timeout=0.2, max_retries=3))
    try:
        with pytest.raises(ProviderError, match="did not answer within 0.2s"):
            asyncio.run(model.generate([Message("user", "hello")], GenerateConfig()))
        assert targets_fixture.STARTED == ["hello"]  # one thread, not one per retry
    finally:
        targets_fixture.RELEASE.set()
