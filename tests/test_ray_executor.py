"""--executor ray on a real local Ray instance (2 CPUs): the calls run on Ray workers, the
dataset is the one the asyncio executor makes, and an endpoint's concurrency holds for the
whole cluster (one limiter actor per endpoint)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from test_batch import attack_setup, batch_recipe, calls, prompts

import aart
from aart.testing import FakeOpenAIServer

ray = pytest.importorskip("ray")

LOCAL = aart.RaySettings(num_cpus=2)


def test_a_run_on_ray_workers_makes_the_local_executors_dataset(tmp_path):
    with FakeOpenAIServer(latency=0.05) as server:
        recipe = batch_recipe(tmp_path, server)
        aart.run(recipe, out=tmp_path / "local")
        local_requests = len(server.requests)
        result = aart.run(recipe, out=tmp_path / "ray", ray=LOCAL)
        assert prompts(tmp_path / "ray") == prompts(tmp_path / "local")
        assert len(server.requests) == 2 * local_requests  # the same calls, made by workers
        assert len(calls(tmp_path / "ray")) == local_requests == result.usage["calls"]
        assert not ray.is_initialized()  # the local instance is gone with the run


@pytest.fixture
def ray_cluster(tmp_path):
    """A Ray head started as a user would (`ray start --head`), stopped afterwards."""
    ray_cli = Path(sys.executable).with_name("ray")
    port = free_port()
    # token authentication, as Ray sets up a cluster by default; its clients must say so
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
    subprocess.run(
        [
            str(ray_cli),
            "start",
            "--head",
            "--num-cpus",
            "2",
            "--port",
            str(port),
            "--include-dashboard",
            "false",
            "--disable-usage-stats",
        ],
        check=True,
        capture_output=True,
        env=env,
        timeout=120,
    )
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        subprocess.run([str(ray_cli), "stop", "--force"], capture_output=True, timeout=120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_drivers_on_one_cluster_share_the_endpoints_concurrency(tmp_path, ray_cluster):
    with FakeOpenAIServer(latency=0.3) as server:
        text = (
            batch_recipe(tmp_path, server)
            .read_text()
            .replace("concurrency: 4", "concurrency: 2\n  adaptive: false")
        )
        recipe = tmp_path / "limited.yaml"
        recipe.write_text(text)
        out = tmp_path / "run"
        aart.define(recipe, out)
        aart.scope(out)
        address, env = ray_cluster
        cmd = [sys.executable, "-m", "aart", "generate", str(out), "--executor", "ray"]
        workers = [
            subprocess.Popen(
                [*cmd, "--ray-address", address],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
            for _ in range(2)
        ]
        for w in workers:
            _, err = w.communicate(timeout=300)
            assert w.returncode == 0, err.decode()
        # each driver may have 2 calls in flight; the cluster's limiter lets 2 through in all
        assert server.peak_in_flight == 2
        assert len(server.requests) == len(calls(out))  # no call made twice


def test_an_attack_on_ray_workers_judges_as_the_local_one(tmp_path):
    with FakeOpenAIServer() as server:
        dataset, common = attack_setup(tmp_path, server)
        local = aart.attack(dataset, out=tmp_path / "local", **common)
        on_ray = aart.attack(dataset, out=tmp_path / "ray", ray=LOCAL, **common)
        assert on_ray.judged == local.judged == on_ray.prompts > 0
        assert on_ray.overall == local.overall and on_ray.outcomes == local.outcomes
        assert not ray.is_initialized()


def test_without_the_extra_the_executor_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(aart.AartError, match=r"pip install 'aart-redteam\[ray\]'"):
        LOCAL.start()
