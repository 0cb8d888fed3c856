"""`aart evaluate` at scale: peak memory of evaluating 100,000 and 10,000,000 prompts (the
released AART prompts cycled, each with its number, so every prompt is distinct) from Parquet,
and 100,000 from JSONL, each in a fresh process, with the released value lists. The file is
read in chunks and every measure is a running count, a bounded distinct count or a fixed-size
sample, so peak RSS should not grow with the file (the goal: a ratio near 1). Embeddings are
off: at about 150 prompts/s they would take their 100,000-prompt sample 11 minutes.

    python bench/bench_evaluate_memory.py [--sizes 100000 1000000 10000000]
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

CSV = (
    Path(__file__).resolve().parents[2] / "shared" / "datasets" / "aart-v1" / "aart-v1-20231117.csv"
)
COLUMNS = ("prompt", "crime", "use_case", "medium_keyword")


def write(path: Path, n: int) -> None:
    with CSV.open(encoding="utf-8") as f:
        base = [{c: r[c] for c in COLUMNS} for r in csv.DictReader(f)]
    batch = 200_000
    if path.suffix == ".parquet":
        writer = None
        for start in range(0, n, batch):
            rows = [
                {**base[i % len(base)], "prompt": f"{base[i % len(base)]['prompt']} #{i}"}
                for i in range(start, min(n, start + batch))
            ]
            table = pa.Table.from_pylist(rows)
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
        assert writer is not None
        writer.close()
    else:
        with path.open("w", encoding="utf-8") as f:
            for i in range(n):
                row = {**base[i % len(base)], "prompt": f"{base[i % len(base)]['prompt']} #{i}"}
                f.write(json.dumps(row) + "\n")


def one(path: str, dims: str) -> None:
    from aart.evaluate import evaluate

    t = time.perf_counter()
    result = evaluate(path, dimensions=dims, embeddings=False)
    secs = time.perf_counter() - t
    d = result["datasets"][0]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    print(
        json.dumps(
            {
                "prompts": d["prompts"],
                "peak_mib": peak / 1024,
                "seconds": secs,
                "coverage": d["coverage"]["policy_concepts"]["presence"],
                "distinct_2": d["diversity"]["distinct_2"],
                "notes": d["notes"],
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dims = work / "dims"
        dims.mkdir()
        with CSV.open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        crimes = sorted({r["crime"].strip() for r in rows if r["crime"].strip()})
        formats = sorted({u.strip() for r in rows for u in r["use_case"].split(",") if u.strip()})
        (dims / "policy_concepts.txt").write_text("\n".join(crimes))
        (dims / "task_formats.txt").write_text("\n".join(formats))
        runs = [(n, ".parquet") for n in args.sizes] + [(min(args.sizes), ".jsonl")]
        results = []
        for n, suffix in runs:
            path = work / f"prompts-{n}{suffix}"
            write(path, n)
            out = subprocess.run(
                [sys.executable, __file__, "--one", str(path), str(dims)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            results.append((suffix, r))
            print(
                f"{r['prompts']:>11,} prompts ({suffix[1:]}): peak RSS {r['peak_mib']:,.0f} MiB, "
                f"{r['seconds']:,.0f} s ({r['prompts'] / r['seconds']:,.0f} prompts/s), "
                f"coverage {r['coverage']:.4f}, distinct-2 {r['distinct_2']:.4f}",
                flush=True,
            )
            path.unlink()
        parquet = [r for suffix, r in results if suffix == ".parquet"]
        large = parquet[-1]
        for small in parquet[:-1]:
            print(
                f"peak RSS ratio, {large['prompts']:,} / {small['prompts']:,} prompts (Parquet): "
                f"{large['peak_mib'] / small['peak_mib']:.3f}"
            )
        print("notes at the largest size:", *large["notes"], sep="\n  ")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--one":
        one(sys.argv[2], sys.argv[3])
        sys.exit(0)
    main()
