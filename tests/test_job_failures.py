"""One failing job never aborts a run; an endpoint that fails every call stops it early with
one message; re-running retries the failed jobs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from conftest import MINI_RECIPE, write_recipe

from aart import pipeline
from aart.errors import EndpointDown, ProviderError
from aart.llm import GenerateConfig, Message, ModelOptions, get_model
from aart.store.db import RunDB

TOO_LONG = {
    "status": 400,
    "body": {"error": {"message": "This model's maximum context length is 4096 tokens"}},
}


def opts(server, **kw):
    base = dict(base_url=server.base_url, backoff_base=0.01, backoff_max=0.02, timeout=5)
    base.update(kw)
    return ModelOptions(**base)


def call(model, n=1):
    """``n`` plain calls in turn; returns each outcome (text or the exception)."""

    async def go():
        out = []
        try:
            for i in range(n):
                try:
                    o = await model.generate([Message("user", f"hello {i}")], GenerateConfig())
                    out.append(o.text)
                except ProviderError as e:
                    out.append(e)
        finally:
            await model.aclose()
        return out

    return asyncio.run(go())


def test_a_401_stops_at_the_first_call(fake_server):
    fake_server.push({"status": 401})
    model = get_model("openai/fake", opts(fake_server), use_cache=False)
    first, second = call(model, 2)
    assert isinstance(first, EndpointDown) and "authentication failed" in str(first)
    assert isinstance(second, EndpointDown)
    assert len(fake_server.requests) == 1  # the second call never left


def test_three_failures_in_a_row_mean_the_endpoint_is_down(fake_server):
    # 2 failures, a success (which resets the count), then 3 failures and the request that
    # had succeeded, sent again, fails too
    fake_server.push(*[{"status": 500}] * 4, {}, *[{"status": 500}] * 7)
    model = get_model("openai/fake", opts(fake_server, max_retries=1), use_cache=False)
    outcomes = call(model, 6)
    kinds = [type(o).__name__ if isinstance(o, Exception) else "ok" for o in outcomes]
    assert kinds == [
        "ProviderError",
        "ProviderError",
        "ok",
        "ProviderError",
        "ProviderError",
        "EndpointDown",
    ]
    assert "3 calls in a row failed for good" in str(outcomes[-1])
    assert "a request it had answered before failed too" in str(outcomes[-1])
    assert len(fake_server.requests) == 12
    assert fake_server.requests[-1] == fake_server.requests[4]  # the probe: "hello 2" again


def test_failures_of_some_prompts_are_not_the_endpoint_down(fake_server):
    # one kind of prompt fails for good, several in a row; the endpoint still answers the
    # request it answered before, so those are the prompts' failures, not "endpoint down"
    fake_server.on_text("broken", {"status": 500})
    model = get_model("openai/fake", opts(fake_server, max_retries=0), use_cache=False)

    async def go():
        out = []
        try:
            for text in ["fine 0", "broken 1", "broken 2", "broken 3", "broken 4", "fine 5"]:
                try:
                    await model.generate([Message("user", text)], GenerateConfig())
                    out.append("ok")
                except ProviderError as e:
                    out.append(type(e).__name__)
        finally:
            await model.aclose()
        return out

    assert asyncio.run(go()) == ["ok", *["ProviderError"] * 4, "ok"]
    assert model.down is None


def test_per_request_rejections_never_stop_the_endpoint(fake_server):
    fake_server.push(*[TOO_LONG] * 5)
    model = get_model("openai/fake", opts(fake_server), use_cache=False)
    outcomes = call(model, 5)
    assert all(type(o) is ProviderError and o.per_request for o in outcomes)
    assert model.down is None


def recipe_on(server, tmp_path, extra=""):
    text = MINI_RECIPE.replace(
        "default: fake/test",
        f"default: openai/fake\n  base_url: {server.base_url}\n  max_retries: 1",
    ).replace("  min_words: 2\n", f"  min_words: 2\n{extra}")
    return write_recipe(tmp_path, text)


def test_one_failing_job_does_not_abort_the_run_and_a_rerun_retries_it(fake_server, tmp_path):
    # every request for one concept is over the context window, whatever the round
    fake_server.on_text("privacy leaks", TOO_LONG)
    recipe = recipe_on(fake_server, tmp_path, "  max_topups: 1\n")
    out = tmp_path / "run"
    result = pipeline.run(recipe, out=out)
    s = result.stats
    assert s.prompts == 12 and s.shortfall == 6  # the other concepts' 12 cells are all there
    assert len(s.failed_jobs) == 4  # 2 attempts, then 2 top-ups packing their 6 cells
    assert all("maximum context length" in f["reason"] for f in s.failed_jobs)
    summary = json.loads((out / "generate.json").read_text())
    assert len(summary["failed_jobs"]) == 4
    calls = len(fake_server.requests)

    fake_server.rules.clear()  # the endpoint is fixed
    again = pipeline.run(recipe, out=out)
    assert again.stats.prompts == 18 and not again.stats.failed_jobs
    # only the missing cells were asked for: the two original attempts, nothing else
    assert len(fake_server.requests) - calls == 2
    db = RunDB(out / "run.db")
    assert db.job_counts("generate").get("failed", 0) == 0
    db.close()


def test_content_filter_rejections_are_refusals_and_topped_up(fake_server, tmp_path):
    rejected = {
        "status": 400,
        "body": {"error": {"message": "The prompt was filtered by the content_filter policy"}},
    }
    recipe = recipe_on(fake_server, tmp_path)
    out = tmp_path / "run"
    pipeline.define(recipe, out=out)
    pipeline.scope(out)
    fake_server.push(rejected, rejected)  # the first two generation calls
    stats = pipeline.generate(out)
    assert stats.refused_calls == 2 and stats.prompts == 18 and not stats.failed_jobs


def test_an_endpoint_that_goes_down_stops_generate_early_with_one_message(fake_server, tmp_path):
    recipe = recipe_on(fake_server, tmp_path)
    out = tmp_path / "run"
    pipeline.define(recipe, out=out)
    pipeline.scope(out)
    fake_server.on_text("", {"status": 503})  # from now on every call fails
    r = subprocess.run(
        [sys.executable, "-m", "aart", "generate", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "calls in a row failed for good" in r.stderr and "HTTP 503" in r.stderr
    assert "re-run the same command" in r.stderr
    assert r.stderr.count("\n") <= 2  # one message
    # 6 jobs at 2 tries each would be 12 calls; the run stopped after 3 jobs (plus the calls
    # already in flight when it did)
    db = RunDB(out / "run.db")
    failed_tries = len(db.failed_calls())
    db.close()
    assert failed_tries < 12


@pytest.mark.parametrize("status", [401, 404])
def test_endpoint_faults_stop_the_run_at_once(fake_server, tmp_path, status):
    recipe = recipe_on(fake_server, tmp_path)
    out = tmp_path / "run"
    pipeline.define(recipe, out=out)
    pipeline.scope(out)
    fake_server.on_text("", {"status": status})
    with pytest.raises(EndpointDown, match=f"HTTP {status}"):
        pipeline.generate(out)


def four_prompts(tmp_path):
    """A dataset of four prompts, r0..r3; r1 is "a story about privacy leaks"."""
    path = tmp_path / "dataset.jsonl"
    prompts = ["a poem about rule breaking", "a story about privacy leaks", "an email", "a memo"]
    path.write_text(
        "".join(json.dumps({"id": f"r{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts))
    )
    return path


def test_an_attack_job_that_fails_is_listed_and_retried_on_rerun(fake_server, tmp_path):
    path = four_prompts(tmp_path)
    # this prompt's calls all fail (Retry-After 0 keeps the retries quick)
    fake_server.on_text("privacy leaks", {"status": 502, "retry_after": 0})
    out = tmp_path / "att"
    kw = dict(target="openai/app", out=out, base_url=fake_server.base_url, min_judged=0.5)
    f = pipeline.attack(path, **kw)
    assert f.prompts == 4 and f.judged == 3 and not f.inconclusive
    assert [j["reason"][:8] for j in f.failed_jobs] == ["HTTP 502"]
    assert f.failed_jobs[0]["id"] == "r1"  # the prompt's id, not only its run.db job
    assert json.loads((out / "attack.json").read_text())["failed_jobs"]
    assert "failed calls 1" in (out / "report.md").read_text()
    # with --min-judged at its default, 3 of 4 judged is inconclusive
    assert pipeline.attack(path, **{**kw, "min_judged": 0.9}).inconclusive

    fake_server.rules.clear()
    before = len(fake_server.requests)
    f = pipeline.attack(path, **kw)
    assert f.judged == 4 and not f.failed_jobs
    assert len(fake_server.requests) - before == 1  # only the failed prompt was sent again


def test_a_judge_whose_retries_are_spent_is_asked_again_on_rerun(fake_server, tmp_path):
    """A judge's 5xx after its retries was kept as an unjudged verdict of a finished job, so
    "re-run the same command" never judged those prompts again."""
    path = four_prompts(tmp_path)
    # the judge's calls about this prompt fail (the target's calls do not quote it so)
    fake_server.on_text('<user_request>"a story about privacy', {"status": 502, "retry_after": 0})
    out = tmp_path / "att"
    kw = dict(
        target="openai/app", judge="openai/judge", out=out, base_url=fake_server.base_url,
        min_judged=0.5,
    )  # fmt: skip
    f = pipeline.attack(path, **kw)
    assert f.judged == 3 and f.unjudged == 0
    assert [j["reason"][:8] for j in f.failed_jobs] == ["HTTP 502"]

    fake_server.rules.clear()
    f = pipeline.attack(path, **kw)
    assert f.judged == 4 and not f.failed_jobs and f.unjudged == 0
