"""Tokens/s of the embedded model through aart versus llama-cpp-python called directly on the
same prompt: each side in its own process (as a user runs them), greedy decoding, no cache,
one warm-up call, then the median of 3 calls; the two sides alternate twice."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time

PROMPT = "Write a short paragraph about lighthouses and why ships rely on them."
MAX_TOKENS = 128
CALLS = 3


def direct() -> list[float]:
    from llama_cpp import Llama

    from aart.llm.local_model import default_model_path

    # The same settings aart uses (llama-cpp-python would default to half the cores).
    engine = Llama(
        model_path=str(default_model_path()), n_ctx=4096, n_threads=os.cpu_count(), verbose=False
    )
    rates = []
    for _ in range(CALLS + 1):
        t = time.perf_counter()
        out = engine.create_chat_completion(
            messages=[{"role": "user", "content": PROMPT}],
            temperature=0.0,
            max_tokens=MAX_TOKENS,
            seed=0,
        )
        rates.append(out["usage"]["completion_tokens"] / (time.perf_counter() - t))
    return rates[1:]


def through_aart() -> list[float]:
    from aart.llm import GenerateConfig, Message, get_model

    model = get_model("local/default", use_cache=False)

    async def go() -> list[float]:
        rates = []
        for _ in range(CALLS + 1):
            t = time.perf_counter()
            out = await model.generate(
                [Message("user", PROMPT)], GenerateConfig(0.0, MAX_TOKENS, 0)
            )
            rates.append(out.usage.completion_tokens / (time.perf_counter() - t))
        return rates[1:]

    return asyncio.run(go())


def main() -> None:
    results: dict[str, list[float]] = {"direct": [], "aart": []}
    for _ in range(2):
        for mode in ("direct", "aart"):
            out = subprocess.run(
                [sys.executable, __file__, mode], capture_output=True, text=True, check=True
            )
            results[mode] += [float(x) for x in out.stdout.split()]
    md, ma = statistics.median(results["direct"]), statistics.median(results["aart"])
    print(
        f"embedded tokens/s: direct {md:.1f}, through aart {ma:.1f} -> ratio {ma / md:.3f} "
        f"(direct {[round(x, 1) for x in results['direct']]}, aart {[round(x, 1) for x in results['aart']]})"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        rates = direct() if sys.argv[1] == "direct" else through_aart()
        print(" ".join(f"{r:.3f}" for r in rates))
    else:
        main()
