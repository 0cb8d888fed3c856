"""Embedding diversity (mean pairwise cosine + Vendi) over n prompts: peak RSS must stay flat
as n grows (running d x d sums, never an n x n matrix). Each n runs in a fresh process."""

from __future__ import annotations

import csv
import resource
import subprocess
import sys
import time
from pathlib import Path

CSV = (
    Path(__file__).resolve().parents[2] / "shared" / "datasets" / "aart-v1" / "aart-v1-20231117.csv"
)


def one(n: int) -> None:
    from aart.evaluate.embeddings import Embedder

    with CSV.open(encoding="utf-8") as f:
        base = [r["prompt"] for r in csv.DictReader(f)]
    texts = [f"{base[i % len(base)]} #{i}" for i in range(n)]
    emb = Embedder()
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    stats = emb.gram(texts)
    secs = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        n,
        loaded,
        peak,
        f"{secs:.1f}",
        f"{1 - stats.mean_pairwise_cosine():.4f}",
        f"{stats.vendi():.2f}",
    )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        one(int(sys.argv[2]))
        sys.exit(0)
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000]
    peaks = {}
    for n in sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True
        )
        n_, loaded, peak, secs, div, vendi = out.stdout.split()
        peaks[n] = int(peak)
        print(
            f"{n:>7} prompts: {secs}s ({n / float(secs):.0f} prompts/s), embedding diversity {div}, "
            f"Vendi {vendi}, peak RSS {int(peak) / 1024:.0f} MiB (model loaded: {int(loaded) / 1024:.0f} MiB)"
        )
    if len(sizes) >= 2:
        print(
            f"peak RSS ratio {sizes[-1]} vs {sizes[0]} prompts: {peaks[sizes[-1]] / peaks[sizes[0]]:.3f}"
        )
