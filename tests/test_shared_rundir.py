"""A run directory is safe to share: a second process is refused with who holds it (never a
traceback, never a paid call twice), the lock dies with its holder, and a run that never
started takes a corrected recipe."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
from conftest import MINI_RECIPE, db_value, wait_until, write_recipe

import aart
from aart.errors import UsageError
from aart.store.lock import RunInUse
from aart.testing import FakeOpenAIServer


def slow_recipe(tmp_path, server):
    text = MINI_RECIPE.replace(
        "default: fake/test",
        f"default: openai/fake\n  base_url: {server.base_url}\n  concurrency: 2",
    ).replace(
        "    enumerate:\n      instruction: List world regions.\n      count: 4",
        "    values: [north, south, east, west]",
    )
    return write_recipe(tmp_path, text)


def paid_calls(out):
    con = sqlite3.connect(out / "run.db")
    n = con.execute("SELECT COUNT(*) FROM calls WHERE cache_key != ''").fetchone()[0]
    con.close()
    return n


def leasing(out):
    """How many workers hold jobs of the run in ``out`` now."""
    sql = "SELECT COUNT(DISTINCT lease_owner) FROM jobs WHERE status='leased'"
    return db_value(out / "run.db", sql)


def test_a_second_run_waits_and_joins_a_generate_joins_and_nothing_is_paid_twice(tmp_path):
    server = FakeOpenAIServer(latency=0.2).start()
    try:
        text = MINI_RECIPE.replace(
            "default: fake/test",
            f"default: openai/fake\n  base_url: {server.base_url}\n  concurrency: 2",
        )
        recipe, out = write_recipe(tmp_path, text), tmp_path / "run"
        cmd = [sys.executable, "-m", "aart", "run", str(recipe), "--out", str(out)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # the first run's Step 1 call (enumerating regions) waits at the server's gate, so the
        # first is in Step 1 however slowly the second process starts
        server.hold()
        first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_until(lambda: server.held, "the first run's Step 1 call", first)
        # a second `aart run` waits for it to finish Steps 1 and 2, then takes Step 3's jobs
        # beside it; its log is a file the test reads while it runs
        log = tmp_path / "second.log"
        with log.open("wb") as sink:
            second = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=sink)
        wait_until(
            lambda: "waiting to join its Step 3" in log.read_text(), "the second to wait", second
        )
        # a writer that needs the directory alone is refused, naming the holder
        define = subprocess.run(
            [sys.executable, "-m", "aart", "define", str(recipe), "--out", str(out)],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert define.returncode == 2, define.stderr
        assert "is in use by another aart process" in define.stderr
        assert f"pid {first.pid}: aart run" in define.stderr
        assert "Traceback" not in define.stderr
        server.release()
        # Step 3 has begun (its jobs are in run.db): the first shares the directory now
        sql = "SELECT COUNT(*) FROM jobs WHERE stage='generate'"
        wait_until(lambda: db_value(out / "run.db", sql), "Step 3's jobs", first)
        # an `aart generate` joins Step 3 as well
        joined = subprocess.run(
            [sys.executable, "-m", "aart", "generate", str(out)],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert joined.returncode == 0, joined.stderr
        assert first.wait(timeout=300) == 0, first.stderr.read()
        assert second.wait(timeout=300) == 0, log.read_text()
        together = len(server.requests)
        assert paid_calls(out) == together
        # one process alone makes as many calls: none was made twice
        aart.run(recipe, out=tmp_path / "alone")
        assert len(server.requests) - together == together
        aart.run(recipe, out=out)  # the directory is free again once they have finished
    finally:
        server.release()
        server.stop()


def test_the_lock_dies_with_its_holder(tmp_path):
    server = FakeOpenAIServer().start()
    try:
        recipe, out = slow_recipe(tmp_path, server), tmp_path / "run"
        cmd = [sys.executable, "-m", "aart", "run", str(recipe), "--out", str(out)]
        server.hold(after=2)  # the run stays part-way, holding its lock, until it is killed
        first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_until(lambda: server.held, "the run's third call", first)
        with pytest.raises(RunInUse):
            aart.define(recipe, out)  # a writer that needs the directory alone
        # a reader (aart evaluate --run) takes no lock and may look beside the writer
        from aart.store.rundir import Run

        with Run.open(out, lock=False) as r:
            assert r.recipe.name == "mini"
        first.send_signal(signal.SIGKILL)
        first.wait()
        server.release()
        result = aart.run(recipe, out=out)  # no stale lock
        assert result.stats.prompts == 18
    finally:
        server.release()
        server.stop()


def test_an_attack_directory_is_locked_too(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "prompt": "a mild test prompt"}\n')
    from aart.store.db import RunDB

    holder = RunDB(tmp_path / "att" / "run.db")
    try:
        with pytest.raises(RunInUse, match="is in use"):
            aart.attack(data, target="fake/app", out=tmp_path / "att")
    finally:
        holder.close()
    assert aart.attack(data, target="fake/app", out=tmp_path / "att").prompts == 1


def test_a_failed_start_does_not_lock_the_run_to_its_recipe(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    broken = MINI_RECIPE.replace("default: fake/test", "default: openai/gpt-4o-mini")
    with pytest.raises(UsageError, match="needs an API key"):
        aart.run(write_recipe(tmp_path, broken, "r.yaml"), out=out)
    assert not out.exists()  # nothing is created before the first step can start
    fixed = write_recipe(tmp_path, MINI_RECIPE, "r.yaml")
    assert aart.run(fixed, out=out).stats.prompts == 18  # nothing was spent: the fix is taken
    # once work is paid for, another recipe is refused, saying what differs
    other = MINI_RECIPE.replace("attempts_per_value: 2", "attempts_per_value: 3")
    with pytest.raises(UsageError, match=r"what differs: scope\.attempts_per_value"):
        aart.run(write_recipe(tmp_path, other, "r.yaml"), out=out)


def test_two_workers_split_a_run_and_pay_nothing_twice(tmp_path):
    """Two `aart generate` processes on one run directory take jobs by lease: both finish,
    each job is done once, and the dataset is the one a single worker makes (their speed is
    measured in bench/bench_workers.py)."""
    server = FakeOpenAIServer(latency=0.2).start()
    try:
        text = (
            MINI_RECIPE.replace(
                "default: fake/test",
                f"default: openai/fake\n  base_url: {server.base_url}\n  concurrency: 4\n"
                "  adaptive: false",
            )
            .replace(
                "    enumerate:\n      instruction: List world regions.\n      count: 4",
                "    values: [north, south, east, west]",
            )
            .replace("attempts_per_value: 2", "attempts_per_value: 10")
        )
        recipe = write_recipe(tmp_path, text)
        outs = {}
        for name, workers in (("one", 1), ("two", 2)):
            out = outs[name] = tmp_path / name
            aart.define(recipe, out)
            aart.scope(out)
            cmd = [sys.executable, "-m", "aart", "generate", str(out)]
            if workers == 2:
                # the calls wait at the server's gate until both workers hold jobs, so the one
                # that starts first cannot finish them all before the other has started
                server.hold()
            procs = [
                subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(workers)
            ]
            if workers == 2:
                wait_until(lambda o=out: leasing(o) == 2, "both workers to hold jobs")
                server.release()
            for p in procs:
                assert p.wait(timeout=300) == 0, p.stderr.read()
        con = sqlite3.connect(outs["two"] / "run.db")
        worked = con.execute(
            "SELECT COUNT(DISTINCT lease_owner) FROM jobs WHERE status='done'"
        ).fetchone()[0]
        con.close()
        assert worked == 2  # both workers took jobs
        assert paid_calls(outs["one"]) == 30
        assert paid_calls(outs["two"]) == paid_calls(outs["one"])  # none done twice
        one = sorted((outs["one"] / "dataset.jsonl").read_text().splitlines())
        two = sorted((outs["two"] / "dataset.jsonl").read_text().splitlines())
        assert [json.loads(x)["prompt"] for x in one] == [json.loads(x)["prompt"] for x in two]
        assert len(one) == 90
    finally:
        server.release()
        server.stop()


def test_two_attack_workers_split_an_attack(tmp_path):
    server = FakeOpenAIServer(latency=0.2).start()
    try:
        data = tmp_path / "d.jsonl"
        data.write_text(
            "".join(
                json.dumps({"id": f"r{i}", "prompt": f"mild prompt {i}"}) + "\n" for i in range(40)
            )
        )
        out = tmp_path / "att"
        cmd = [sys.executable, "-m", "aart", "attack", str(data), "--target", "openai/app",
               "--base-url", server.base_url, "--concurrency", "4", "--out", str(out)]  # fmt: skip
        procs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)
        ]
        for p in procs:
            assert p.wait(timeout=300) == 0, p.stderr.read()
        assert paid_calls(out) == 40 == len(server.requests)  # each prompt sent once
        summary = json.loads((out / "attack.json").read_text())
        assert summary["prompts"] == summary["judged"] == 40
    finally:
        server.stop()
