"""Faithful prompts per token and per minute: aart (reasoning none with constrained and free
decoding, reasoning full with constrained decoding) against the zero-shot baseline of Perez et al., on the embedded model in-process
and through `openai/` on llama-cpp-python's own OpenAI-compatible server, in one run.

Step 1 is left out (explicit values), so every figure is Step 3's: tokens per faithful dataset
prompt (every token of every generation call, rejected answers and top-ups included), faithful
prompts per minute of wall time, and the duplicate rate among valid items. The baseline has no
cells, so its figures are per valid (non-blank, non-refusal, non-duplicate) prompt.

    python bench/bench_faithful.py [--cells 18] [--only embedded|server]
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

import aart
from aart.testing.llama_server import LlamaServer
from aart.textsim import find_duplicates

CONCEPTS = ["fraud", "burglary", "arson", "identity theft", "illegal dumping", "poaching"]
FORMATS = ["email", "poem", "how-to guide", "news article", "speech", "song lyrics"]
# Free decoding with full reasoning is left out: on the 0.5B model free decoding already loses
# most items at reasoning none.
VARIANTS = [("none", "constrained"), ("none", "free"), ("full", "constrained")]
REGIONS = ["eastern africa", "western europe", "united states", "south-eastern asia", "mexico"]


def recipe(
    reasoning: str, decoding: str, model: dict[str, Any], cells: int, queries: int = 3
) -> dict[str, Any]:
    src = (importlib.resources.files("aart") / "recipes" / "aart-demo.yaml").read_text()
    r = yaml.safe_load(src)
    small = r.pop("sizes")["small"]
    r["dimensions"] = {
        "policy_concepts": {"description": "crimes", "values": CONCEPTS},
        "task_formats": {"description": "kinds of text", "values": FORMATS},
        "regions": {"description": "world regions", "values": REGIONS},
    }
    r["models"] = {**model, "decoding": decoding}
    r["scope"] = {
        "strategy": "balanced",
        "attempts": cells // queries,
        "queries_per_attempt": queries,
        "seed": 0,
    }
    # the embedded-model tuning of the demo's small size (template, cell phrasing, no
    # examples), at the reasoning depth asked for: full keeps the paper's five fields
    r["generate"].update({k: v for k, v in small["generate"].items() if k != "max_topups"})
    r["generate"]["reasoning"] = reasoning
    if reasoning == "full":
        r["generate"]["max_tokens"] = 1500
    r["generate"]["max_topups"] = 3
    return r


def run_aart(work: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    start = time.perf_counter()
    result = aart.run(path, out=work / name)
    seconds = time.perf_counter() - start
    s, u = result.stats, result.usage
    tokens = u["prompt_tokens"] + u["completion_tokens"]
    return {
        "variant": name,
        "prompts": s.prompts,
        "requested": s.requested,
        "tokens": tokens,
        "tokens_in": u["prompt_tokens"],
        "tokens_per_prompt": tokens / s.prompts if s.prompts else float("inf"),
        "per_minute": 60 * s.prompts / seconds,
        "duplicate_rate": (s.exact_duplicates + s.near_duplicates) / max(1, s.valid_items),
        "rejection_rate": s.rejection_rate,
        "valid_rate": s.valid_rate,
        "seconds": seconds,
    }


def run_baseline(work: Path, model: dict[str, Any], n: int) -> dict[str, Any]:
    import asyncio

    from aart.llm import ModelOptions, get_model
    from aart.steps.baseline import run_baseline as baseline

    m = get_model(
        model["default"],
        ModelOptions(base_url=model.get("base_url"), concurrency=model.get("concurrency")),
        use_cache=False,
    )

    async def go() -> Any:
        try:
            return await baseline(m, "zero-shot", n, work / "baseline")
        finally:
            await m.aclose()

    start = time.perf_counter()
    stats = asyncio.run(go())
    seconds = time.perf_counter() - start
    rows = [json.loads(line) for line in (work / "baseline" / "dataset.jsonl").open()]
    dups = find_duplicates([r["prompt"] for r in rows], 0.8)
    unique = len(rows) - len(dups)
    return {
        "variant": "baseline zero-shot",
        "prompts": unique,
        "requested": n,
        "tokens": stats.tokens,
        "tokens_in": None,
        "tokens_per_prompt": stats.tokens / unique if unique else float("inf"),
        "per_minute": 60 * unique / seconds,
        "duplicate_rate": len(dups) / max(1, len(rows)),
        "rejection_rate": None,
        "valid_rate": len(rows) / n,
        "seconds": seconds,
    }


def warm_up(model: dict[str, Any]) -> None:
    """One call before any timing, so no variant pays for loading the weights."""
    import asyncio

    from aart.llm import GenerateConfig, Message, ModelOptions, get_model

    m = get_model(model["default"], ModelOptions(base_url=model.get("base_url")))

    async def once() -> None:
        try:
            await m.generate([Message("user", "Say hi.")], GenerateConfig(0.0, 4, 0))
        finally:
            await m.aclose()

    asyncio.run(once())


def table(rows: list[dict[str, Any]], baseline: dict[str, Any]) -> str:
    out = [
        "| variant | prompts | tokens/prompt | vs baseline | prompts/min | vs baseline | dup. rate | rejected |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rej = "-" if r["rejection_rate"] is None else f"{r['rejection_rate']:.0%}"
        out.append(
            f"| {r['variant']} | {r['prompts']}/{r['requested']} | {r['tokens_per_prompt']:.0f} "
            f"| {r['tokens_per_prompt'] / baseline['tokens_per_prompt']:.2f} | {r['per_minute']:.1f} "
            f"| {r['per_minute'] / baseline['per_minute']:.2f} | {r['duplicate_rate']:.0%} | {rej} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=18)
    ap.add_argument("--only", choices=["embedded", "server"])
    ap.add_argument(
        "--queries",
        type=int,
        nargs="*",
        help="instead: reasoning none, constrained, at these queries per call (scaling)",
    )
    args = ap.parse_args()
    if args.queries:
        scaling(args.cells, args.queries)
        return
    backends = [b for b in ("embedded", "server") if args.only in (None, b)]
    report: dict[str, Any] = {}
    for backend in backends:
        server = None
        if backend == "embedded":
            model: dict[str, Any] = {"default": "local/default"}
        else:
            server = LlamaServer()
            url = server.start()
            # the server runs one request at a time: queueing more only risks timeouts
            model = {"default": "openai/qwen", "base_url": url, "concurrency": 1, "timeout": 600}
        try:
            warm_up(model)
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                rows = []
                for reasoning, decoding in VARIANTS:
                    name = f"aart {reasoning} {decoding}"
                    spec = recipe(reasoning, decoding, model, args.cells)
                    rows.append(run_aart(work, name.replace(" ", "-"), spec))
                    rows[-1]["variant"] = name
                    print(json.dumps(rows[-1]), flush=True)
                base = run_baseline(work, model, args.cells * 2)
                print(json.dumps(base), flush=True)
                rows.append(base)
        finally:
            if server is not None:
                server.stop()
        report[backend] = rows
        print(f"\n## {backend}\n" + table(rows, base), flush=True)
    Path("bench-faithful.json").write_text(json.dumps(report, indent=2))


def scaling(cells: int, queries: list[int]) -> None:
    """Tokens per faithful prompt as the instructions are shared by more queries per call."""
    model: dict[str, Any] = {"default": "local/default"}
    warm_up(model)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for q in queries:
            spec = recipe("none", "constrained", model, cells, q)
            rows.append(run_aart(work, f"none-q{q}", spec))
            rows[-1]["variant"] = f"aart none constrained, {q} queries per call"
            print(json.dumps(rows[-1]), flush=True)
        base = run_baseline(work, model, cells * 2)
        rows.append(base)
    print("\n## embedded, queries per call\n" + table(rows, base), flush=True)


if __name__ == "__main__":
    main()
