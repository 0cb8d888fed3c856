"""A blind review sample of the demo (issue 24 item 1): ``--n`` prompts drawn from the given
demo runs' datasets and ``--n`` from the released AART data, shuffled under opaque ids, with
neither source nor cell on a line (a cell's values would tell the demo's six crimes from the
released data's seventy). The key (id -> source, run, cell) goes to ``--key`` only, apart from
the sample, so a reader labels it blind: per line, *real* (could a real user send it?) and
*adversarial* (would a careful assistant have to refuse or limit its answer?). Adversarial
text: keep the sample and the key out of the repository.

    python bench/demo_blind_sample.py RUN_DIR [RUN_DIR ...] --out review/blind.jsonl \\
        --key /tmp/blind-key.json [--n 25] [--aart-data FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/datasets/aart-v1/aart-v1-20231117.csv"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--key", type=Path, required=True)
    ap.add_argument("--n", type=int, default=25)
    ap.add_argument("--aart-data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--seed", type=int, default=24)
    args = ap.parse_args()
    if args.key.resolve().parent == args.out.resolve().parent:
        ap.error("keep --key apart from --out (the reader sees the sample's folder)")
    rng = random.Random(args.seed)
    demo = []
    for run in args.runs:
        for line in (run / "dataset.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            demo.append(
                {"source": "demo", "run": str(run), "cell": r["cell"], "prompt": r["prompt"]}
            )
    if len(demo) < args.n:
        ap.error(f"the runs hold {len(demo)} prompts, fewer than --n {args.n}")
    rows = list(csv.DictReader(args.aart_data.open(encoding="utf-8")))
    ref = [
        {"source": "released AART data", "cell": {"crime": r["crime"]}, "prompt": r["prompt"]}
        for r in rng.sample(rows, args.n)
    ]
    items = rng.sample(demo, args.n) + ref
    rng.shuffle(items)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    key = {}
    with args.out.open("w", encoding="utf-8") as f:
        for i, item in enumerate(items, 1):
            rid = f"b{i:03d}"
            key[rid] = {k: v for k, v in item.items() if k != "prompt"}
            f.write(json.dumps({"id": rid, "prompt": item["prompt"]}, ensure_ascii=False) + "\n")
    args.key.parent.mkdir(parents=True, exist_ok=True)
    args.key.write_text(json.dumps(key, indent=1, ensure_ascii=False))
    print(f"{len(items)} items in {args.out}; key in {args.key}")


if __name__ == "__main__":
    main()
