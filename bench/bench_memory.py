"""Peak RSS while running N pending jobs through the real job path (run.db leases -> job
runner -> model -> records). Memory must not grow with N. Usage: bench_memory.py [N ...]"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aart.llm import GenerateConfig, Message, get_model
from aart.runner import run_jobs
from aart.store.db import RunDB


def one(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = RunDB(Path(tmp) / "run.db")
        db.add_jobs("bench", ((f"job{i}", {"i": i}) for i in range(n)))
        model = get_model("fake/bench", store=db, use_cache=False)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

        async def work(job: tuple[str, dict]) -> None:
            jid, payload = job
            out = await model.generate(
                [Message("user", f"job {payload['i']}")], GenerateConfig(max_tokens=8)
            )
            db.complete_job(jid, [(f"{jid}:0", "bench", {"text": out.text})])

        t = time.perf_counter()
        asyncio.run(run_jobs(db, "bench", work, 64))
        elapsed = time.perf_counter() - t
        done = db.job_counts("bench").get("done", 0)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"{n} {done} {before} {peak} {elapsed:.1f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        one(int(sys.argv[2]))
        sys.exit(0)
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000]
    peaks = {}
    for n in sizes:  # each size in a fresh process, so peaks do not carry over
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True
        )
        n_, done, before, peak, secs = out.stdout.split()
        peaks[n] = int(peak)
        print(
            f"{n:>7} jobs: {done} done in {secs}s, peak RSS {int(peak) / 1024:.1f} MiB "
            f"(after loading the jobs into run.db: {int(before) / 1024:.1f} MiB)"
        )
    if len(sizes) >= 2:
        a, b = sizes[0], sizes[-1]
        print(f"peak RSS ratio {b} vs {a} jobs: {peaks[b] / peaks[a]:.3f}")
