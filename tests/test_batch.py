"""--batch: the calls go through the server's file and batch endpoints (our fake server
implements them), come back through the same validation as online answers, cost the batch
price, and a killed process picks its batches up again; `aart batch export|import` does the
same through files for `vllm run-batch`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MINI_RECIPE, db_value, vllm_run_batch, wait_until, write_recipe

import aart
from aart.errors import UsageError
from aart.llm.batch import BatchSettings
from aart.testing import FakeOpenAIServer

FAST = BatchSettings(poll=0.02, poll_max=0.1)


def batch_recipe(tmp_path: Path, server: FakeOpenAIServer, name: str = "recipe.yaml") -> Path:
    text = MINI_RECIPE.replace(
        "default: fake/test",
        f"default: openai/fake\n  base_url: {server.base_url}\n  concurrency: 4",
    ).replace(
        "    enumerate:\n      instruction: List world regions.\n      count: 4",
        "    values: [north, south, east, west]",
    )
    text += (
        "prices:\n  openai/fake: {input: 2.0, output: 8.0, batch_input: 1.0, batch_output: 4.0}\n"
    )
    return write_recipe(tmp_path, text, name)


def prompts(out: Path) -> list[tuple[str, str]]:
    rows = [json.loads(x) for x in (out / "dataset.jsonl").read_text().splitlines()]
    return sorted((r["prompt"], json.dumps(r["cell"], sort_keys=True)) for r in rows)


def calls(out: Path) -> list[tuple[str, int, int, float]]:
    con = sqlite3.connect(out / "run.db")
    rows = con.execute(
        "SELECT tag, prompt_tokens, completion_tokens, cost FROM calls WHERE cache_key != ''"
    ).fetchall()
    con.close()
    return rows


def submitted_custom_ids(server: FakeOpenAIServer) -> list[str]:
    ids = []
    for b in server.batches.values():
        for line in server.files[b["input_file_id"]].splitlines():
            ids.append(json.loads(line)["custom_id"])
    return ids


def test_a_batch_run_makes_the_online_dataset_at_the_batch_price(tmp_path):
    with FakeOpenAIServer() as server:
        recipe = batch_recipe(tmp_path, server)
        online = aart.run(recipe, out=tmp_path / "online")
        online_requests = len(server.requests)
        assert online_requests > 0 and not server.batches

        result = aart.run(recipe, out=tmp_path / "batched", batch=FAST)
        assert len(server.requests) == online_requests  # not one chat call online
        assert server.batches and all(b["status"] == "completed" for b in server.batches.values())
        assert prompts(tmp_path / "batched") == prompts(tmp_path / "online")
        assert result.stats.batches == len(server.batches)

        paid = calls(tmp_path / "batched")
        assert len(paid) == len(server.batch_requests) == online_requests
        # custom_id names the job; each request was submitted once
        ids = submitted_custom_ids(server)
        assert len(ids) == len(set(ids)) == len(paid)
        assert all("#" in i for i in ids)
        # the batch price: half the online price here
        tokens_in = sum(p for _, p, _, _ in paid)
        tokens_out = sum(c for _, _, c, _ in paid)
        assert result.usage["cost"] == pytest.approx((tokens_in * 1.0 + tokens_out * 4.0) / 1e6)
        assert online.usage["cost"] == pytest.approx(2 * result.usage["cost"])

        # a re-run has nothing left to ask
        before = len(server.batches)
        again = aart.run(recipe, out=tmp_path / "batched", batch=FAST)
        assert len(server.batches) == before and again.spent_now["calls"] == 0


def test_error_answers_fail_their_job_and_expired_requests_go_in_the_next_batch(tmp_path):
    with FakeOpenAIServer() as server:
        recipe = batch_recipe(tmp_path, server)
        aart.run(recipe, out=tmp_path / "online")
        server.requests.clear()
        # one value's requests are over the context window (an error-file line, status 400);
        # the first batch expires after answering 3 requests
        too_long = {"error": {"message": "maximum context length exceeded"}}
        server.on_text("privacy leaks", {"status": 400, "body": too_long})
        server.batch_expire_after = 3
        stats = aart.run(recipe, out=tmp_path / "batched", batch=FAST).stats
        statuses = [b["status"] for b in server.batches.values()]
        assert statuses[0] == "expired" and statuses[-1] == "completed"
        # the privacy-leaks jobs failed with the server's reason; the others went on
        assert stats.failed_jobs and all(
            "maximum context length" in j["reason"] for j in stats.failed_jobs
        )
        online = {p for p in prompts(tmp_path / "online") if "privacy leaks" not in p[1]}
        assert set(prompts(tmp_path / "batched")) == online
        # an expired request was asked again, never one that had its answer
        ids = submitted_custom_ids(server)
        answered = calls(tmp_path / "batched")
        assert len(answered) == len({t for t, *_ in answered})
        assert len(ids) > len(set(ids))  # the expired ones, twice


def test_a_killed_run_picks_up_its_batch_instead_of_submitting_it_again(tmp_path):
    with FakeOpenAIServer() as server:
        server.hold()  # the batch stays in progress (at the server's gate) until the kill
        recipe, out = batch_recipe(tmp_path, server), tmp_path / "run"
        cmd = [sys.executable, "-m", "aart", "run", str(recipe), "--out", str(out), "--batch"]
        first = subprocess.Popen(
            [*cmd, "--batch-poll", "0.05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        # the batch's id is in run.db: the kill lands past its creation
        sql = "SELECT COUNT(*) FROM batches WHERE id='batch_1'"
        wait_until(lambda: db_value(out / "run.db", sql), "the batch's id in run.db", first)
        first.kill()
        first.wait()
        assert len(server.batches) == 1
        server.batch_delay = 0.01
        server.release()
        again = subprocess.run(
            [*cmd, "--batch-poll", "0.05"], capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr
        assert "batch batch_1 on openai/fake" in again.stderr  # picked up, not submitted anew
        ids = submitted_custom_ids(server)
        assert len(ids) == len(set(ids)) == len(calls(out))


def test_a_batch_created_but_not_recorded_is_found_by_its_submission_id(tmp_path, monkeypatch):
    from aart.store.batches import BatchTables

    with FakeOpenAIServer() as server:
        recipe, out = batch_recipe(tmp_path, server), tmp_path / "run"
        rename = BatchTables.rename

        def crash(self, old, new):  # the process dies between the server's answer and run.db
            raise KeyboardInterrupt

        monkeypatch.setattr(BatchTables, "rename", crash)
        with pytest.raises(KeyboardInterrupt):
            aart.run(recipe, out=out, batch=FAST)
        assert len(server.batches) == 1
        monkeypatch.setattr(BatchTables, "rename", rename)
        aart.run(recipe, out=out, batch=FAST)
        ids = submitted_custom_ids(server)
        assert len(ids) == len(set(ids)) == len(calls(out))


def test_a_server_without_a_batch_api_is_a_clear_error(tmp_path, monkeypatch):
    with FakeOpenAIServer() as server:
        recipe = batch_recipe(tmp_path, server)
        monkeypatch.setattr(server, "_batch_api", lambda m, p, h, b, w: server._send(w, 404, {}))
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "aart",
                "run",
                str(recipe),
                "--out",
                str(tmp_path / "r"),
                "--batch",
                "--batch-poll",
                "0.05",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        assert "offers no batch API" in proc.stderr and "Traceback" not in proc.stderr


def test_export_and_import_for_vllm_run_batch_make_the_online_dataset(tmp_path):
    with FakeOpenAIServer() as server:
        recipe = batch_recipe(tmp_path, server)
        aart.run(recipe, out=tmp_path / "online")
        out = tmp_path / "files"
        aart.define(recipe, out)
        aart.scope(out)
        served = len(server.requests)
        cli = [sys.executable, "-m", "aart", "batch"]
        first = subprocess.run(
            [*cli, "export", str(out)], capture_output=True, text=True, timeout=120
        )
        assert first.returncode == 0, first.stderr
        requests = out / "batches" / "requests-1.jsonl"
        assert (
            f"wrote {len(requests.read_text().splitlines())} requests for openai/fake"
            in first.stdout
        )
        assert f"vllm run-batch -i {requests}" in first.stdout and "--model fake" in first.stdout
        assert len(server.requests) == served  # exporting calls nobody
        rounds = 0
        result = aart.BatchFiles(exported=[(requests, "openai/fake", 0)])
        while result.stats is None:
            rounds += 1
            assert rounds < 10 and len(result.exported) == 1
            path = result.exported[0][0]
            results = path.with_name("results-" + path.name)
            vllm_run_batch(server.base_url, path, results)
            result = aart.batch_export(out, import_from=results)
            assert result.imported is not None and result.imported[0] > 0
        assert prompts(out) == prompts(tmp_path / "online")
        assert len(calls(out)) == len(server.requests) - served
        status = subprocess.run(
            [*cli, "status", str(out)], capture_output=True, text=True, timeout=60
        )
        assert "0 queued, 0 submitted" in status.stdout


def attack_setup(tmp_path: Path, server: FakeOpenAIServer) -> tuple[Path, dict]:
    """A generated dataset, and the settings of an attack on an openai/ target with an LLM
    judge, both answered by ``server``."""
    aart.run(batch_recipe(tmp_path, server), out=tmp_path / "run")
    settings = dict(
        target="openai/app",
        judge="openai/judge",
        base_url=server.base_url,
        system_prompt="You are the test assistant.",
    )
    return tmp_path / "run" / "dataset.jsonl", settings


def test_an_attack_in_batches_judges_as_the_online_one(tmp_path):
    with FakeOpenAIServer() as server:
        dataset, common = attack_setup(tmp_path, server)
        # a converter, an LLM rewrite and PAIR's rounds: chains of calls, each step a batch
        common.update(
            strategies=["base64", "paraphrase", "pair"], attacker="openai/attacker", limit=4
        )
        online = aart.attack(dataset, out=tmp_path / "online", **common)
        served = len(server.requests)
        batched = aart.attack(dataset, out=tmp_path / "batched", batch=FAST, **common)
        assert len(server.requests) == served  # target, attacker and judge answered by batches
        # rewrites, then the target's answers, then the verdicts, then PAIR's next rounds
        assert len(server.batches) > 3
        assert batched.judged == online.judged == batched.prompts > 0
        assert batched.overall == online.overall and batched.outcomes == online.outcomes
        assert batched.usage["calls"] == online.usage["calls"]  # the same calls, none twice


def test_the_dry_run_prices_step_3_at_the_batch_price(tmp_path):
    with FakeOpenAIServer() as server:
        recipe = batch_recipe(tmp_path, server)
        online = aart.dry_run(recipe)
        batched = aart.dry_run(recipe, batch=True)
        assert batched["cost"] == pytest.approx(online["cost"] / 2)
        r = subprocess.run(
            [sys.executable, "-m", "aart", "run", str(recipe), "--dry-run", "--batch"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "(Step 3 at the batch price)" in r.stdout


def test_import_reports_foreign_and_malformed_lines_and_refuses_negative_tokens(tmp_path, caplog):
    with FakeOpenAIServer() as server:
        recipe = batch_recipe(tmp_path, server)
        out = tmp_path / "files"
        aart.define(recipe, out)
        aart.scope(out)
        result = aart.batch_export(out)
        path = result.exported[0][0]
        results = path.with_name("results-" + path.name)
        vllm_run_batch(server.base_url, path, results)
        lines = results.read_text().splitlines()
        bad = json.loads(lines[0])
        bad["response"]["body"]["usage"]["prompt_tokens"] = -5
        odd = json.loads(lines[2])
        odd["response"]["status_code"] = "two hundred"
        foreign = {**json.loads(lines[1]), "custom_id": "someone-else#0"}
        lines = [json.dumps(bad), lines[1], json.dumps(odd), *lines[3:]]
        lines += ["not json at all", json.dumps(foreign), "[1, 2]"]
        results.write_text("\n".join(lines) + "\n")
        with caplog.at_level("WARNING", logger="aart"):
            result = aart.batch_export(out, import_from=results)
        notes = [r.getMessage() for r in caplog.records]
        assert any("line 1: malformed" in n and "prompt_tokens is '-5'" in n for n in notes)
        assert any(f"{results}, line {len(lines) - 2}: not JSON" in n for n in notes)
        assert any("'someone-else#0' is no request of this run" in n for n in notes)
        assert any("a JSON list, not an object" in n for n in notes)
        assert any("status_code 'two hundred' is not an HTTP status" in n for n in notes)
        assert result.imported is not None and result.imported[0] == len(lines) - 5
        while result.stats is None:
            path = result.exported[0][0]
            results = path.with_name("results-" + path.name)
            vllm_run_batch(server.base_url, path, results)
            result = aart.batch_export(out, import_from=results)
        failed = result.stats.failed_jobs
        assert len(failed) == 2 and "prompt_tokens is '-5'" in failed[0]["reason"]
        assert "is not an HTTP status" in failed[1]["reason"]
        assert all(c[1] >= 0 and c[2] >= 0 for c in calls(out))  # nothing negative was paid


def exported(tmp_path: Path, server: FakeOpenAIServer) -> tuple[Path, Path]:
    """A run whose Steps 1 and 2 are done and whose first requests are exported: the run
    directory and the requests file."""
    recipe = batch_recipe(tmp_path, server)
    out = tmp_path / "files"
    aart.define(recipe, out)
    aart.scope(out)
    return out, aart.batch_export(out).exported[0][0]


def test_an_answer_for_a_model_the_command_does_not_use_is_not_paid_at_no_price(tmp_path, caplog):
    with FakeOpenAIServer() as server:
        out, path = exported(tmp_path, server)
        results = path.with_name("results-" + path.name)
        vllm_run_batch(server.base_url, path, results)
        # imported by a command generating with another model: openai/fake's answers would
        # be paid at a price this command does not know (nothing), so they are not taken
        with caplog.at_level("WARNING", logger="aart"):
            with pytest.raises(UsageError, match="nothing imported"):
                aart.batch_export(out, import_from=results, model="openai/other")
        notes = [r.getMessage() for r in caplog.records]
        assert any("an answer for openai/fake, which this command does not use" in n for n in notes)
        assert calls(out) == []
        # the requests still wait for the right command
        result = aart.batch_export(out, import_from=results, model="openai/fake")
        assert result.imported == (len(results.read_text().splitlines()), 0)


def test_an_empty_or_cut_short_results_file_imports_nothing_and_says_so(tmp_path):
    # it said "imported 0 answers", exited 0, marked the batch imported and wrote the same
    # requests again, as often as it was run
    with FakeOpenAIServer() as server:
        out, path = exported(tmp_path, server)
        empty = tmp_path / "empty.jsonl"
        empty.write_text("")
        cut = tmp_path / "cut.jsonl"
        cut.write_text('{"id": "batch_req_1", "custom_id": "')
        cli = [sys.executable, "-m", "aart", "batch", "import", str(out)]
        for results in (empty, cut):
            r = subprocess.run([*cli, str(results)], capture_output=True, text=True, timeout=120)
            assert r.returncode == 2 and "nothing imported" in r.stderr, r.stderr
        assert sorted(p.name for p in (out / "batches").glob("requests-*.jsonl")) == [path.name]
        results = path.with_name("results-" + path.name)
        vllm_run_batch(server.base_url, path, results)
        assert aart.batch_export(out, import_from=results).imported[0] > 0


def test_a_batch_whose_format_is_rejected_asks_again_in_the_next_mode(tmp_path):
    with FakeOpenAIServer() as server:
        server.reject_formats = {"json_schema"}
        recipe = batch_recipe(tmp_path, server)
        aart.run(recipe, out=tmp_path / "online")
        aart.run(recipe, out=tmp_path / "batched", batch=FAST)
        assert prompts(tmp_path / "batched") == prompts(tmp_path / "online")
        formats = [(r.get("response_format") or {}).get("type") for r in server.batch_requests]
        # the first batch asked with json_schema and was refused; the next ones fell back
        assert formats[0] == "json_schema" and "json_object" in formats
        rejected = [f for f in formats if f == "json_schema"]
        assert 0 < len(rejected) < len(formats)


def test_batch_export_to_a_file_needs_no_key_or_server(tmp_path, mini_recipe):
    # "openai/gpt-x needs an API key" stopped a file export meant for a GPU node with no
    # server; nothing is sent, so nothing needs the key
    out = tmp_path / "r"
    aart.define(mini_recipe, out)
    aart.scope(out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    r = subprocess.run(
        [sys.executable, "-m", "aart", "batch", "export", str(out), "-m", "openai/gpt-x"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "--model gpt-x" in r.stdout
    # a run that calls the hosted API still needs the key, said before any call
    r = subprocess.run(
        [sys.executable, "-m", "aart", "generate", str(out), "-m", "openai/gpt-x"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert r.returncode != 0 and "needs an API key" in r.stderr
