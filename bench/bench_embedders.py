"""The two embedders of embedding diversity on the released AART dataset (3,269 prompts), in
one run: all-MiniLM-L6-v2 on torch (the reference) and the same model in ONNX Runtime with
int8 weights. Figures: the speed ratio, and how far the diversity scores move.

    python bench/bench_embedders.py
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

from aart.evaluate.embeddings import Embedder, Int8Embedder, int8_model

CSV = (
    Path(__file__).resolve().parents[2] / "shared" / "datasets" / "aart-v1" / "aart-v1-20231117.csv"
)


def main() -> None:
    with CSV.open(encoding="utf-8") as f:
        texts = [r["prompt"] for r in csv.DictReader(f)]
    int8_model()  # built (or found) before timing
    rows = {}
    for name, embedder in (("minilm", Embedder()), ("minilm-int8", Int8Embedder())):
        embedder.gram(texts[:64])  # warm up
        t = time.perf_counter()
        stats = embedder.gram(texts)
        secs = time.perf_counter() - t
        rows[name] = (secs, 1 - stats.mean_pairwise_cosine(), stats.vendi())
        print(
            f"{name:<12} {len(texts) / secs:7.0f} prompts/s  embedding diversity "
            f"{rows[name][1]:.4f}  Vendi {rows[name][2]:.2f}",
            flush=True,
        )
    ref, fast = rows["minilm"], rows["minilm-int8"]
    print(
        f"speed ratio int8 / reference: {ref[0] / fast[0]:.2f}x; diversity "
        f"{fast[1] - ref[1]:+.4f}, Vendi {fast[2] - ref[2]:+.2f} ({fast[2] / ref[2] - 1:+.1%})"
    )


if __name__ == "__main__":
    main()
