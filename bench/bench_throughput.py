"""2,000 calls at concurrency 64 against the fake server with a fixed 200 ms latency.
Ideal: 64 / 0.2 s = 320 calls/s. Prints the achieved rate and its ratio to the ideal."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from aart.llm import GenerateConfig, Message, ModelOptions, get_model

CALLS, CONCURRENCY, LATENCY, PORT = 2000, 64, 0.2, 8771


async def main() -> dict[str, float]:
    model = get_model(
        "openai/bench",
        ModelOptions(base_url=f"http://127.0.0.1:{PORT}/v1", concurrency=CONCURRENCY),
    )
    msgs = [[Message("user", f"request {i}")] for i in range(CALLS)]
    await model.generate(msgs[0], GenerateConfig(max_tokens=16))  # warm the connection pool
    t = time.perf_counter()
    await asyncio.gather(*(model.generate(m, GenerateConfig(max_tokens=16)) for m in msgs))
    elapsed = time.perf_counter() - t
    await model.aclose()
    rate = CALLS / elapsed
    ideal = CONCURRENCY / LATENCY
    return {
        "calls": CALLS,
        "seconds": elapsed,
        "calls_per_s": rate,
        "ideal": ideal,
        "ratio": rate / ideal,
    }


if __name__ == "__main__":
    # The server runs in its own process so it does not share a GIL with the client.
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aart.testing.fake_server",
            "--port",
            str(PORT),
            "--latency",
            str(LATENCY),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        server.stdout.readline()
        r = asyncio.run(main())
    finally:
        server.terminate()
    print(
        f"throughput: {r['calls_per_s']:.1f} calls/s of ideal {r['ideal']:.0f} "
        f"-> ratio {r['ratio']:.3f} ({r['calls']} calls in {r['seconds']:.2f}s)"
    )
