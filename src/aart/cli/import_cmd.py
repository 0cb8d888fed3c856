"""`aart import`: a public prompt-injection benchmark's checkout in as an aart dataset."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import click

from ..errors import UsageError
from ..interop.benchmarks import BENCHMARKS, Tally, iter_benchmark, write_dataset


@click.command("import")
@click.argument("benchmark", type=click.Choice(sorted(BENCHMARKS)))
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False), help="The dataset to write (.jsonl)."
)
@click.option("--limit", type=int, default=None, help="Write at most this many cases.")
@click.option(
    "--split",
    default=None,
    help="agentdojo: the benchmark version (v1, default; v1.1 ... v1.2.1); injecagent: the "
    "setting (base, default; enhanced); bipia: test (default) or train.",
)
@click.option(
    "--subset",
    multiple=True,
    help="Only these (repeatable): agentdojo suites (workspace, travel, banking, slack); "
    "injecagent dh (direct harm) or ds (data stealing); bipia tasks (email, table, code, qa, "
    "abstract).",
)
@click.option(
    "--attack",
    default=None,
    help="agentdojo: the attack whose text carries each goal (important_instructions, "
    "default; direct, ignore_previous, system_message, injecagent).",
)
@click.option(
    "--position",
    "positions",
    multiple=True,
    type=click.Choice(["start", "middle", "end"]),
    help="bipia: where the attack sits in the context (repeatable; default all three).",
)
@click.option(
    "--revision",
    default=None,
    help="The benchmark's commit to record in each line's `source` (read from PATH/.git "
    "when PATH is a git clone).",
)
@click.option(
    "--report",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write the counts (read, converted, skipped by reason) to this JSON file.",
)
def import_command(
    benchmark: str,
    path: str,
    out: str,
    limit: int | None,
    split: str | None,
    subset: tuple[str, ...],
    attack: str | None,
    positions: tuple[str, ...],
    revision: str | None,
    report: str | None,
) -> None:
    """Read a checkout of a public benchmark's data at PATH (AgentDojo, InjecAgent or BIPIA)
    and write its cases as an aart injection dataset: one line per case, with the user
    task, the context carrying the payload, the benchmark's axes as the cell and its
    success criterion. The checkout's code is read as text, never run."""
    options: dict[str, object] = {}
    if attack is not None:
        if benchmark != "agentdojo":
            raise UsageError("--attack applies to agentdojo only")
        options["attack"] = attack
    if positions:
        if benchmark != "bipia":
            raise UsageError("--position applies to bipia only")
        options["positions"] = list(positions)
    if revision is not None:
        if not re.fullmatch(r"[0-9A-Za-z._/-]{1,80}", revision):
            raise UsageError("--revision takes a commit hash or a tag")
        options["revision"] = revision
    bench = BENCHMARKS[benchmark]
    t = Tally(bench.title)
    began = time.perf_counter()
    lines = iter_benchmark(
        benchmark, path, t, split=split, subset=list(subset) or None, limit=limit, **options
    )
    written = write_dataset(lines, out)
    seconds = time.perf_counter() - began
    if not written:
        notes = "".join(f"; {what}" for what in sorted(t.notes))
        raise UsageError(
            f"{path}: no case of {t.benchmark} could be converted "
            f"({t.read} read; skipped: {dict(t.skipped) or 'none'}){notes}"
        )
    click.echo(
        f"{t.benchmark}: {t.read} cases read, {written} converted "
        f"({t.judged} need an LLM judge), {sum(t.skipped.values())} skipped "
        f"in {seconds:.1f}s"
    )
    for reason, n in sorted(t.skipped.items()):
        click.echo(f"  skipped {n}: {reason}")
    for what, n in sorted(t.notes.items()):
        click.echo(f"  note ({n}): {what}")
    click.echo(f"wrote {out}")
    if report:
        data = {**t.as_dict(), "converted": written, "seconds": round(seconds, 3), "out": out}
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        Path(report).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {report}")
