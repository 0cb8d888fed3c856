"""Cooperating workers: one `aart generate` process against two on the same run directory
(jobs taken by lease), on a slow endpoint (the fake server at 400 ms a call, concurrency 8
each), in one run. Figures: the two workers' wall time as a ratio of one worker's, and their
paid calls as a ratio of its (the goal: at most 0.6 and 1.05).

    python bench/bench_workers.py [--attempts-per-value 80]
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

import aart
from aart.testing import FakeOpenAIServer


def recipe(base_url: str, per_value: int) -> dict:
    text = (importlib.resources.files("aart") / "recipes" / "bank-chatbot.yaml").read_text()
    r = yaml.safe_load(text)
    r.pop("sizes", None)
    r["models"] = {"default": "openai/fake", "base_url": base_url, "concurrency": 8,
                   "adaptive": False}  # fmt: skip
    for d in r["dimensions"].values():
        if "enumerate" in d:
            d.pop("enumerate")
            d["values"] = ["first", "second", "third", "fourth"]
    r["scope"]["attempts_per_value"] = per_value
    r["generate"]["max_topups"] = 0
    return r


def paid(out: Path) -> int:
    con = sqlite3.connect(out / "run.db")
    n = con.execute("SELECT COUNT(*) FROM calls WHERE cache_key != ''").fetchone()[0]
    con.close()
    return int(n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempts-per-value", type=int, default=40)
    args = ap.parse_args()
    server = FakeOpenAIServer(latency=0.4).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            spec = work / "bank.yaml"
            spec.write_text(yaml.safe_dump(recipe(server.base_url, args.attempts_per_value)))
            rows = {}
            for workers in (1, 2):
                out = work / f"w{workers}"
                aart.define(spec, out)
                aart.scope(out)
                cmd = [sys.executable, "-m", "aart", "generate", str(out)]
                start = time.perf_counter()
                procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL) for _ in range(workers)]
                assert all(p.wait() == 0 for p in procs)
                rows[workers] = {"seconds": time.perf_counter() - start, "paid": paid(out)}
                print(json.dumps({"workers": workers, **rows[workers]}), flush=True)
    finally:
        server.stop()
    one, two = rows[1], rows[2]
    print(
        f"two workers: {two['seconds'] / one['seconds']:.2f} of one worker's wall time "
        f"({two['seconds']:.1f} s against {one['seconds']:.1f} s), "
        f"{two['paid'] / one['paid']:.2f}x its paid calls ({two['paid']} against {one['paid']})"
    )


if __name__ == "__main__":
    main()
