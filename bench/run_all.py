"""Run every benchmark in one go (figures are ratios measured within one run)."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
for script in (
    "bench_throughput.py",
    "bench_memory.py",
    "bench_embedded.py",
    "bench_coverage.py",
    "bench_embedding_memory.py",
    "bench_faithful.py",
    "bench_queueing.py",
    "bench_workers.py",
    "bench_ray.py",
    "bench_evaluate_memory.py",
    "bench_embedders.py",
):
    print(f"== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=True)
