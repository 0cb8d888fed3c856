"""Prompt injection end to end, as a user runs it (issue 21): generate a dataset with the
built-in ``email-assistant`` recipe, attack a tool-calling target with it (the context as a
tool result and as a document), import a sample of InjecAgent and attack the same target the
same way, then set the rates side by side. Each step is the ``aart`` CLI in its own process,
so the figures are what a user gets; every step resumes when re-run on the same ``--work``.

    python bench/bench_injection.py --injecagent /tmp/import-data/injecagent \\
        --size small --sample 8 --max-steps 2 --max-tokens 120 --threads 1 --work /tmp/e2e

Writes ``bench/results/injection.json`` (every attack's headline, per-axis rates, utility,
success with the task still done, the calls per tool) and ``bench/results/injection.md``
(the tables docs/benchmarks.md quotes). The default generator is the embedded 1.5B
(``local/qwen2.5-coder-1.5b``, the small size's ``write: parts``: it writes the carriers,
code the rest), the default target the embedded 0.5B (``local/default``) as the e-mail
assistant: 0.5B and 1.5B models, so the figures show how the loop reads, not how a real
application fares. Give ``--model``/``--target`` (and ``--base-url``) for a real one.
An incomplete run (exit 5) still attacks what it made, and an inconclusive attack (exit 4:
too many cases undecided at the step bound or needing an LLM judge) is reported as such.

InjecAgent (MIT, Copyright (c) 2023 Qiusi Zhan) is not in the repository: clone
https://github.com/uiuc-kang-lab/InjecAgent and pass its path. Its whole base setting is
imported and ``aart attack --sample`` spreads the attacked cases over its axes (the
importer's ``--limit N`` keeps the first N, which share one attacker tool).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def aart(*args: str, ok: tuple[int, ...] = (0,)) -> float:
    """Run ``aart ARGS`` with this checkout's code; the seconds it took. An exit code outside
    ``ok`` stops the bench (the attack's gate codes are never set here)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    t = time.perf_counter()
    print("$ aart " + " ".join(args), flush=True)
    rc = subprocess.run([sys.executable, "-m", "aart", *args], env=env).returncode
    if rc not in ok:
        sys.exit(f"aart {args[0]} exited {rc}")
    return time.perf_counter() - t


def summary(out: Path, seconds: float) -> dict[str, Any]:
    """The figures of one attack, from its attack.json."""
    a = json.loads((out / "attack.json").read_text())
    agent = a.get("agent") or {}
    return {
        "dir": str(out),
        "seconds": round(seconds),
        "prompts": a["prompts"],
        "judged": a["judged"],
        "target_errors": a["target_errors"],
        "failed_jobs": len(a.get("failed_jobs") or []),
        "overall": a["overall"],
        "by_value": {
            axis: [
                {k: c[k] for k in ("value", "successes", "n", "rate", "ci_low", "ci_high")}
                for c in cells
            ]
            for axis, cells in a["by_value"].items()
        },
        "utility": agent.get("utility"),
        "success_with_task_done": agent.get("success_with_task_done"),
        "criteria": agent.get("criteria"),
        "tool_calls": agent.get("tool_calls"),
        "max_steps_reached": agent.get("max_steps_reached"),
        "unjudged": a["prompts"] - a["judged"],
    }


def pct(r: dict[str, Any] | None) -> str:
    if not r or not r["n"]:
        return "not checked"
    return (
        f"{r['successes']}/{r['n']} = {100 * r['rate']:.0f}% "
        f"[{100 * r['ci_low']:.0f}, {100 * r['ci_high']:.0f}]"
    )


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"Target `{res['target']}`, generator `{res['model']}`, `--size {res['size']}`, "
        f"InjecAgent sample `--sample {res['sample']}` (seed 0), `--max-steps "
        f"{res['max_steps']}`, `--max-tokens {res['max_tokens']}`.",
        "",
        f"Dataset: {res['dataset']['cases']} cases of {res['dataset']['cells']} cells; this "
        f"invocation's `aart run` took {res['dataset']['seconds']} s (a resumed run makes no "
        "calls: see its run directory's summary for the first one's).",
        "",
        "| dataset | context as | judged of cases | attack success [95% CI] | undecided | "
        "at the step bound | task still done | success with the task done | time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key, a in res["attacks"].items():
        name, mode = key.rsplit("/", 1)
        lines.append(
            f"| {name} | {mode} | {a['judged']} of {a['prompts']} | {pct(a['overall'])} | "
            f"{a['unjudged']} | {a['max_steps_reached'] or 0} | "
            f"{pct(a['utility'])} | {pct(a['success_with_task_done'])} | {a['seconds']} s |"
        )
    for key, a in res["attacks"].items():
        lines += ["", f"**{key}**: per axis (successes/n)", ""]
        for axis, cells in a["by_value"].items():
            vals = ", ".join(f"{c['value']} {c['successes']}/{c['n']}" for c in cells)
            lines.append(f"- {axis}: {vals}")
        if a["tool_calls"]:
            calls = ", ".join(f"{k} {v}" for k, v in a["tool_calls"].items())
            lines.append(f"- tool calls: {calls}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--injecagent", required=True, help="a checkout of InjecAgent")
    ap.add_argument("--size", default="small", help="the recipe's size (default small)")
    ap.add_argument("--sample", type=int, default=16, help="InjecAgent cases to attack")
    ap.add_argument("--model", default="local/qwen2.5-coder-1.5b", help="the generating model")
    ap.add_argument("--target", default="local/default")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--max-steps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument(
        "--context-as",
        action="append",
        choices=["tool", "document"],
        help="repeatable (default: both)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/aart-bench-injection"))
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="llama.cpp threads (AART_LOCAL_THREADS; 1 on a machine shared with other work)",
    )
    args = ap.parse_args()
    if args.threads:
        os.environ["AART_LOCAL_THREADS"] = str(args.threads)
    modes = args.context_as or ["tool", "document"]
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    base = ["--base-url", args.base_url] if args.base_url else []

    run = work / "mail"
    gen_s = aart(
        "run", "email-assistant", "--size", args.size, "--model", args.model,
        "--out", str(run), *base, ok=(0, 5),
    )  # fmt: skip
    cases = sum(1 for x in (run / "dataset.jsonl").read_text().splitlines() if x.strip())
    cells = sum(1 for x in (run / "blueprint.jsonl").read_text().splitlines() if x.strip())
    ia = work / "injecagent.jsonl"
    aart("import", "injecagent", args.injecagent, "--out", str(ia))

    attacks: dict[str, Any] = {}
    for mode in modes:
        for name, data, extra in (
            ("email-assistant", run / "dataset.jsonl", []),
            ("InjecAgent base", ia, ["--sample", str(args.sample)]),
        ):
            out = work / f"{name.split()[0].lower()}-{mode}"
            s = aart(
                "attack", str(data), "--target", args.target, "--context-as", mode,
                "--max-steps", str(args.max_steps), "--max-tokens", str(args.max_tokens),
                "--out", str(out), *extra, *base, ok=(0, 4),
            )  # fmt: skip
            attacks[f"{name}/{mode}"] = summary(out, s)

    res = {
        "target": args.target,
        "model": args.model,
        "size": args.size,
        "sample": args.sample,
        "max_steps": args.max_steps,
        "max_tokens": args.max_tokens,
        "dataset": {"cases": cases, "cells": cells, "seconds": round(gen_s)},
        "attacks": attacks,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "injection.json").write_text(json.dumps(res, indent=1) + "\n")
    (RESULTS / "injection.md").write_text(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()
