"""`aart baseline` (Perez et al. generators for comparison) and `aart topup` (close gaps)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal, cast

import click

from ..llm import get_model
from ..steps.baseline import BaselineStats, load_pool, run_baseline
from ..steps.topup import topup_run
from ..store.db import RunDB
from ..store.rundir import Run
from .common import echo_kv, no_cache_option


@click.command("baseline")
@click.argument("method", type=click.Choice(["zero-shot", "few-shot"]))
@click.option("--model", "-m", required=True, metavar="PROVIDER/MODEL", help="The generator model.")
@click.option("--n", "n", default=160, show_default=True, help="Generation calls (samples).")
@click.option(
    "--out", "-o", required=True, type=click.Path(file_okay=False), help="Output directory."
)
@click.option(
    "--pool",
    default=None,
    help="few-shot: examples to sample from (a dataset.jsonl or its directory).",
)
@click.option("--shots", default=5, show_default=True, help="few-shot: examples per call.")
@click.option("--temperature", default=0.7, show_default=True)
@click.option("--seed", default=0, show_default=True)
@no_cache_option
def baseline_command(
    method: str,
    model: str,
    n: int,
    out: str,
    pool: str | None,
    shots: int,
    temperature: float,
    seed: int,
    no_cache: bool,
) -> None:
    """Generate a baseline dataset (zero-shot or stochastic few-shot, Perez et al. 2022) into
    OUT/dataset.jsonl, to compare with AART on the same model and token budget."""
    examples = load_pool(pool) if pool else None
    db = RunDB(Path(out) / "run.db")
    m = get_model(model, store=db, use_cache=not no_cache)

    kind = cast(Literal["zero-shot", "few-shot"], method)  # click.Choice has checked it

    async def go() -> BaselineStats:
        try:
            return await run_baseline(
                m,
                kind,
                n,
                Path(out),
                pool=examples,
                shots=shots,
                temperature=temperature,
                seed=seed,
            )
        finally:
            await m.aclose()

    stats = asyncio.run(go())
    db.close()
    click.echo(f"baseline {method}: {out}/dataset.jsonl")
    echo_kv(
        [
            ("prompts", f"{stats.prompts} of {stats.requested} samples"),
            ("blanks removed", stats.blanks),
            ("refusals removed", stats.refusals),
            ("tokens", f"{stats.tokens:,}"),
            ("tokens per valid prompt", f"{stats.tokens_per_valid_prompt:.1f}"),
        ]
    )


@click.command("topup")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option(
    "--min-count", default=1, show_default=True, help="Values mentioned by fewer prompts are gaps."
)
@click.option(
    "--min-share", default=0.0, show_default=True, help="Also a gap: below this share of prompts."
)
@click.option(
    "--attempts", "attempts_per_value", default=1, show_default=True, help="Attempts added per gap."
)
@click.option("--axis", "axes", multiple=True, help="Only these dimensions (repeatable).")
def topup_command(
    run_dir: str, min_count: int, min_share: float, attempts_per_value: int, axes: tuple[str, ...]
) -> None:
    """Find under-covered values in RUN's dataset and append attempts for them to the
    blueprint; then `aart generate RUN` fills only those gaps."""
    with Run.open(run_dir) as run:
        result = topup_run(
            run,
            min_count=min_count,
            min_share=min_share,
            attempts_per_value=attempts_per_value,
            axes=list(axes) or None,
        )
    for axis, gaps in result["gaps"].items():
        click.echo(f"{axis}: {len(gaps)} under-covered" + (f": {', '.join(gaps)}" if gaps else ""))
    click.echo(
        f"added {result['attempts_added']} attempts ({result['queries_added']} queries) to "
        f"{run_dir}/blueprint.jsonl; run `aart generate {run_dir}` to fill them"
    )
