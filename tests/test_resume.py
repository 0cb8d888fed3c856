"""Kill a run with SIGKILL part-way, re-run it: no lost work, no duplicates, no repeated calls."""

import json
import os
import signal
import sqlite3
import subprocess
import sys

from conftest import MINI_RECIPE, wait_until, write_recipe

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
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: server.held, "the run's 7th call", proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
        server.release()
        assert proc.returncode == 130 and "re-run the same command to resume" in err
        assert "Traceback" not in err
        first = len(server.requests)
        finished = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert finished.returncode == 0
        assert len(server.requests) - first <= 18 - (first - 4)
        rows = (out / "dataset.jsonl").read_text().splitlines()
        assert len(rows) == 54
    finally:
        server.release()
        server.stop()
