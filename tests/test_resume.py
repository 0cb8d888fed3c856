"""Kill a run with SIGKILL part-way, re-run it: no lost work, no duplicates, no repeated calls."""

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
from conftest import MINI_RECIPE, sigint_reaches_children, wait_until, write_recipe

from aart.jobs.runner import run_jobs
from aart.llm import Model, ModelOptions
from aart.llm.providers.fake import ScriptedAPI
from aart.llm.types import Message, RawResponse
from aart.testing import FakeOpenAIServer


def test_sigkill_then_resume(tmp_path):
    server = FakeOpenAIServer(latency=0.25).start()
    try:
        text = MINI_RECIPE.replace(
            "default: fake/test",
            f"default: openai/fake\n  base_url: {server.base_url}\n  concurrency: 2",
        )
        text = text.replace(
            "    enumerate:\n      instruction: List world regions.\n      count: 4",
            "    values: [north, south, east, west]",
        )
        text = text.replace("attempts_per_value: 2", "attempts_per_value: 6")
        recipe = write_recipe(tmp_path, text)
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "aart.cli.main", "run", str(recipe), "--out", str(out)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # past the 7th call the calls wait at the server's gate: the kill lands part-way
        # however fast or slow the run goes
        server.hold(after=7)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_until(lambda: server.held, "the run's 8th call", proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        server.release()
        first = len(server.requests)
        assert 7 <= first < 18, "the kill must land part-way through the 18 attempts"

        db = sqlite3.connect(out / "run.db")
        done = db.execute("SELECT COUNT(*) FROM jobs WHERE status='done'").fetchone()[0]
        records = db.execute("SELECT COUNT(*) FROM records WHERE kind='prompt'").fetchone()[0]
        done_ids = {r[0] for r in db.execute("SELECT id FROM jobs WHERE status='done'")}
        db.close()
        assert records == 3 * done  # a job's records land with its status, or not at all
        assert 0 < done < 18

        finished = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert finished.returncode == 0, finished.stderr
        second = len(server.requests) - first
        assert second <= 18 - done  # finished (and cached) jobs are never paid for again

        rows = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
        ids = [r["id"] for r in rows]
        assert len(ids) == len(set(ids)) == 54
        assert {r["provenance"]["job_id"] for r in rows} >= done_ids
    finally:
        server.release()
        server.stop()


def test_ctrl_c_says_how_to_resume_and_loses_nothing(tmp_path):
    server = FakeOpenAIServer(latency=0.25).start()
    try:
        text = MINI_RECIPE.replace(
            "default: fake/test",
            f"default: openai/fake\n  base_url: {server.base_url}\n  concurrency: 2",
        ).replace("attempts_per_value: 2", "attempts_per_value: 6")
        recipe = write_recipe(tmp_path, text)
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "aart.cli.main", "run", str(recipe), "--out", str(out)]
        server.hold(after=6)  # Ctrl-C lands in Step 3, whatever the machine's speed
        with sigint_reaches_children():
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: server.held, "the run's 7th call", proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
        server.release()
        assert proc.returncode == 130 and "re-run the same command to resume" in err
        assert "Traceback" not in err
        # said at once, and truly: the held call is cancelled (the server still holds it)
        assert "note: stopping: calls in flight are cancelled and sent again on resume" in err
        first = len(server.requests)
        finished = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert finished.returncode == 0
        # the calls the Ctrl-C cut off are no failures (they were counted as failed)
        total = next(ln for ln in finished.stdout.splitlines() if "run total" in ln)
        assert "0 failed or invalid" in total and "cut off by a stop" in total, total
        assert len(server.requests) - first <= 18 - (first - 4)
        rows = (out / "dataset.jsonl").read_text().splitlines()
        assert len(rows) == 54
    finally:
        server.release()
        server.stop()


class _AnswerOnCue:
    """A transport whose answer comes when the test says: ``sending`` is set once the call
    waits for it, ``answer`` is the future the test completes."""

    online = True

    def __init__(self) -> None:
        self.sending = asyncio.Event()
        self.answer: asyncio.Future[RawResponse] = asyncio.get_running_loop().create_future()

    def accepts(self, api: object) -> bool:
        return True

    def attach(self, model: object) -> None:
        pass

    async def send(self, api: object, call: object) -> RawResponse:
        self.sending.set()
        return await self.answer

    def close(self) -> None:
        pass


def test_a_ctrl_c_landing_as_the_answer_arrives_is_not_lost():
    # Python 3.11's asyncio.wait_for returns the answer and drops a cancellation that lands
    # in the same loop step as it (CPython gh-86296): the Ctrl-C was lost, the run went on
    # to its next call and, with that call held, hung (the flake of the test above)
    async def main() -> None:
        transport = _AnswerOnCue()
        model = Model("fake/s", ScriptedAPI("s", ModelOptions(), []), transport=transport)
        call = asyncio.create_task(model.generate([Message("user", "hi")]))
        sending = asyncio.create_task(transport.sending.wait())
        await asyncio.wait({call, sending}, return_when=asyncio.FIRST_COMPLETED)
        assert not call.done(), call  # it waits for its answer
        transport.answer.set_result(RawResponse("an answer"))
        call.cancel()  # the Ctrl-C, in the same step as the answer
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(main())


def test_a_worker_whose_cancel_was_swallowed_takes_no_next_job():
    # whatever call swallows a Ctrl-C's cancellation (a library's, a provider's), the job
    # runner starts no job after it: the cancel stands, and the run stops
    class Jobs:
        def __init__(self) -> None:
            self.left = [(f"j{i}", {}) for i in range(5)]

        def claim_jobs(self, stage: str, n: int, ttl: float) -> list[tuple[str, dict]]:
            taken, self.left = self.left[:n], self.left[n:]
            return taken

        def renew_leases(self, ttl: float) -> None: ...
        def drop_leases(self) -> None: ...
        def others_leasing(self, stage: str) -> int:
            return 0

        def fail_job(self, job_id: str, error: str) -> None: ...

    started: list[str] = []

    async def main() -> None:
        in_job = asyncio.Event()

        async def worker(job: tuple[str, dict]) -> None:
            started.append(job[0])
            if len(started) == 1:
                in_job.set()
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    pass  # swallowed, as 3.11's wait_for does when the answer lands with it

        run = asyncio.create_task(run_jobs(Jobs(), "generate", worker, concurrency=1))
        await in_job.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert started == ["j0"]


def test_a_resumed_run_counts_only_the_calls_left(tmp_path):
    import aart

    recipe = write_recipe(tmp_path, MINI_RECIPE)
    out = tmp_path / "run"
    aart.run(recipe, out=out)
    seen: list = []

    def start(label, total):
        seen.append((label, total))
        return lambda: seen.append("tick")

    aart.run(recipe, out=out, progress=start)
    bars = [x for x in seen if x != "tick" and x[0].startswith("generate on")]
    # the bar says what was done before and counts what is left (nothing), not 0 of all
    assert len(bars) == 1 and bars[0][0].endswith("calls done before)") and bars[0][1] == 0
    assert "tick" not in seen


def test_ctrl_c_in_step_1_says_it_is_stopping_too(tmp_path):
    # before: Step 1 (which runs its calls itself, not through the job runner) said nothing
    server = FakeOpenAIServer().start()
    try:
        text = MINI_RECIPE.replace(
            "default: fake/test", f"default: openai/fake\n  base_url: {server.base_url}"
        )
        recipe = write_recipe(tmp_path, text)
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "aart.cli.main", "run", str(recipe), "--out", str(out)]
        server.hold(after=0)  # the first call is Step 1's enumeration of the regions
        with sigint_reaches_children():
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: server.held, "Step 1's first call", proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 130 and "Traceback" not in err
        assert "note: stopping: calls in flight are cancelled" in err
        assert not (out / "dimensions" / "regions.yaml").exists()
    finally:
        server.release()
        server.stop()
