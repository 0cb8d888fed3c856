"""The Ray executor against the asyncio one: 2,000 calls to the fake server (a separate
process, 200 ms a call) at concurrency 64, through aart's Model (retries, limits, accounting),
the calls made in this process or on the workers of a local Ray instance (2 CPUs). Figure: the
Ray executor's throughput as a ratio of the asyncio executor's (goal: at least 0.8).

    python bench/bench_ray.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
import urllib.request

from aart.llm import GenerateConfig, Message, ModelOptions, get_model
from aart.llm.transport.direct import DIRECT
from aart.llm.transport.ray import RayExecutor


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def run_calls(base_url: str, n: int, executor: RayExecutor | None) -> float:
    options = ModelOptions(base_url=base_url, concurrency=64, adaptive=False, timeout=60)
    model = get_model("openai/fake", options)
    model.transport = executor or DIRECT
    start = time.perf_counter()
    try:
        outs = await asyncio.gather(
            *(
                model.generate([Message("user", f"question {i}")], GenerateConfig(max_tokens=20))
                for i in range(n)
            )
        )
    finally:
        await model.aclose()
    elapsed = time.perf_counter() - start
    assert len(outs) == n and model.calls == n
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "aart.testing.fake_server", "--port", str(port), "--latency", "0.2"],
        stdout=subprocess.PIPE,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(base_url + "/models", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        local = asyncio.run(run_calls(base_url, args.calls, None))
        executor = RayExecutor(num_cpus=2)
        try:
            asyncio.run(run_calls(base_url, 64, executor))  # workers warmed up
            on_ray = asyncio.run(run_calls(base_url, args.calls, executor))
        finally:
            executor.shutdown()
    finally:
        server.terminate()
    ideal = args.calls / 64 * 0.2
    print(
        f"{args.calls} calls, 200 ms each, concurrency 64 (ideal {ideal:.2f}s)\n"
        f"  asyncio executor: {local:.2f}s = {args.calls / local:,.0f} calls/s "
        f"({ideal / local:.2f} of ideal)\n"
        f"  ray executor (local instance, 2 CPUs): {on_ray:.2f}s = "
        f"{args.calls / on_ray:,.0f} calls/s ({ideal / on_ray:.2f} of ideal)\n"
        f"  throughput ratio ray / asyncio: {local / on_ray:.2f}"
    )


if __name__ == "__main__":
    main()
