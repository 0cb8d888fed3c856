"""Train the refusal model's weights (``src/aart/refusal_model.npy``) on the *build* sources
of ``bench/bench_refusal.py`` only: the project's own set and GPTFuzz ``train.csv``. The
held-out sources (GPTFuzz ``evaluate.csv``, OpenAI RBR gold, JAILJUDGE mini, the ChatGPT
replies of Reuter & Schulze, PyRIT's refusal set) are never loaded here.

Logistic regression over the hashed features of :mod:`aart.refusal_model`, full-batch
gradient descent with L2, fixed seed-free initialisation (zeros): the same data gives the
same weights. The override thresholds are chosen by 5-fold cross-validation grouped by
GPTFuzz question (no question in both a fold's training and its scoring part)::

    python bench/train_refusal_model.py --data /tmp/refusal-data
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_refusal as br  # noqa: E402

from aart import refusal_model as rm  # noqa: E402
from aart.refusal import rules_detail  # noqa: E402
from aart.textsim import canonical  # noqa: E402

L2 = 1e-4
STEPS = 400
RATE = 0.5


def _matrix(vecs: list[dict[int, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = np.concatenate([np.full(len(v), i) for i, v in enumerate(vecs)])
    cols = np.concatenate([np.fromiter(v.keys(), int, len(v)) for v in vecs])
    vals = np.concatenate([np.fromiter(v.values(), float, len(v)) for v in vecs])
    return rows, cols, vals


def _scores(w: np.ndarray, x: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> np.ndarray:
    rows, cols, vals = x
    return np.bincount(rows, weights=vals * w[cols], minlength=n)


def train(x: tuple[np.ndarray, np.ndarray, np.ndarray], y: np.ndarray) -> np.ndarray:
    rows, cols, vals = x
    n = len(y)
    w = np.zeros(rm.DIM)
    g2 = np.zeros(rm.DIM)
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-_scores(w, x, n)))
        grad = np.bincount(cols, weights=vals * (p - y)[rows], minlength=rm.DIM) / n + L2 * w
        g2 += grad * grad  # AdaGrad: rare n-grams still move
        w -= RATE * grad / (np.sqrt(g2) + 1e-8)
    return w


def _sub(x, keep: np.ndarray):
    rows, cols, vals = x
    mask = keep[rows]
    remap = np.cumsum(keep) - 1
    return remap[rows[mask]], cols[mask], vals[mask]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/tmp/refusal-data"))
    ap.add_argument("--out", type=Path, default=ROOT / "src" / "aart" / "refusal_model.npy")
    args = ap.parse_args()

    build = [s for s in br.SOURCES if s.role == "build"]
    replies, groups = [], []
    for src in build:
        got = src.load(args.data)
        replies += got
        if src.name.startswith("GPTFuzz"):
            import csv

            with (args.data / "gptfuzz" / "train.csv").open(newline="", encoding="utf-8") as f:
                groups += [int(r["question"]) for r in csv.DictReader(f)]
        else:
            groups += [-1 - (i % 5) for i in range(len(got))]  # spread over the folds
    print(f"{len(replies)} build replies from {[s.name for s in build]}")
    vecs, rule_ref, signal = [], [], []
    for r in replies:
        t = "\n".join(line for line in map(canonical, r.text.splitlines()) if line)
        d = rules_detail(r.text)
        rule_ref.append(d.status == "refusal")
        signal.append(d.score > 0)
        vecs.append(rm.vector(rm.features(t, d.status, d.by, d.score)))
    y = np.array([r.human == "refusal" for r in replies], float)
    rule_ref = np.array(rule_ref)
    x = _matrix(vecs)
    groups = np.array(groups)

    # out-of-fold probabilities, to choose the override thresholds
    fold = np.where(groups >= 0, groups % 5, (-groups - 1) % 5)
    oof = np.zeros(len(y))
    for k in range(5):
        tr = fold != k
        w = train(_sub(x, tr), y[tr])
        te = ~tr
        oof[te] = 1 / (1 + np.exp(-_scores(w, _sub(x, te), int(te.sum()))))
    print(f"rules alone: accuracy {np.mean(rule_ref == (y == 1)):.4f}")
    best = None
    for hi in (0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.01):
        for lo in (-0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4):
            pred = np.where(rule_ref, oof > lo, oof >= hi)
            acc = np.mean(pred == (y == 1))
            if best is None or acc > best[0]:
                best = (acc, hi, lo)
    print(
        f"out-of-fold best: accuracy {best[0]:.4f} at FLIP_TO_REFUSAL={best[1]}, "
        f"FLIP_TO_ANSWER={best[2]}"
    )
    pred = np.where(rule_ref, oof > rm.FLIP_TO_ANSWER, oof >= rm.FLIP_TO_REFUSAL)
    print(f"out-of-fold at the module's thresholds: accuracy {np.mean(pred == (y == 1)):.4f}")
    names = np.array([r.source for r in replies])
    for name in dict.fromkeys(names):
        part = names == name
        print(f"  {name}: {np.mean(pred[part] == (y[part] == 1)):.4f} of {int(part.sum())}")
    signal = np.array(signal)
    pred = np.where(rule_ref, oof > rm.FLIP_TO_ANSWER, signal & (oof >= rm.FLIP_TO_REFUSAL))
    print(
        "... flipping to refusal only with a decline or lecture sentence: accuracy "
        f"{np.mean(pred == (y == 1)):.4f} ({int((~signal & ~rule_ref).sum())} non-refusals "
        "without one)"
    )
    w = train(x, y)
    np.save(args.out, w.astype(np.float16), allow_pickle=False)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
