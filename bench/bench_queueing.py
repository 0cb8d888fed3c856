"""Queueing is not failure: one small dataset through llama-cpp-python's own server (which
computes one request at a time and cuts a stream short when another arrives) at concurrency 1,
at the old default (8 requests in flight, fixed, without streaming), and with adaptive
concurrency (up to 8, streaming, the new default), in one run.

Every variant gets the same deadline, short enough that a request queued behind a few others
misses it (as the 120 s default did at concurrency 8 with larger prompts). Figures: paid tokens
per dataset prompt (every call the server ran, abandoned ones included, as aart counts them),
calls per dataset prompt, abandoned calls, and wall time as a ratio to concurrency 1.

    python bench/bench_queueing.py [--cells 12] [--timeout 40]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from bench_faithful import recipe, warm_up

import aart
from aart.testing.llama_server import LlamaServer

VARIANTS = {
    "concurrency 1": {"concurrency": 1, "adaptive": False},
    "fixed 8, no streaming (old default)": {"concurrency": 8, "adaptive": False, "stream": False},
    "adaptive up to 8, streaming (default)": {"concurrency": 8},
}


def run(work: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = work / name
    start = time.perf_counter()
    try:
        result = aart.run(path, out=out, no_cache=True)
        prompts, error = result.stats.prompts, None
    except aart.AartError as e:  # the old default can end with the endpoint taken for down
        prompts, error = 0, str(e)[:120]
    seconds = time.perf_counter() - start
    con = sqlite3.connect(out / "run.db")
    calls, tokens, abandoned = con.execute(
        "SELECT COUNT(*), COALESCE(SUM(prompt_tokens + completion_tokens), 0),"
        " COALESCE(SUM(cache_key = 'abandoned'), 0) FROM calls WHERE cache_key != ''"
    ).fetchone()
    con.close()
    return {
        "variant": name,
        "prompts": prompts,
        "calls": calls,
        "abandoned": abandoned,
        "tokens": tokens,
        "tokens_per_prompt": tokens / prompts if prompts else float("inf"),
        "calls_per_prompt": calls / prompts if prompts else float("inf"),
        "seconds": seconds,
        "error": error,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=40.0)
    args = ap.parse_args()
    server = LlamaServer()
    url = server.start()
    rows = []
    try:
        base = {"default": "openai/qwen", "base_url": url, "timeout": args.timeout}
        warm_up(base)
        with tempfile.TemporaryDirectory() as tmp:
            for name, settings in VARIANTS.items():
                model = {**base, **settings, "max_retries": 2}
                spec = recipe("none", "constrained", model, args.cells, queries=2)
                spec["generate"]["max_topups"] = 1
                rows.append(run(Path(tmp), name.split(",")[0].replace(" ", "-"), spec))
                rows[-1]["variant"] = name
                print(json.dumps(rows[-1]), flush=True)
    finally:
        server.stop()
    one = rows[0]
    print(
        "\n| variant | prompts | calls/prompt | abandoned calls | tokens/prompt | vs conc. 1 | wall time vs conc. 1 |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['variant']} | {r['prompts']} | {r['calls_per_prompt']:.2f} | {r['abandoned']} "
            f"| {r['tokens_per_prompt']:.0f} | {r['tokens_per_prompt'] / one['tokens_per_prompt']:.2f} "
            f"| {r['seconds'] / one['seconds']:.2f} |" + (f" ({r['error']})" if r["error"] else "")
        )


if __name__ == "__main__":
    main()
