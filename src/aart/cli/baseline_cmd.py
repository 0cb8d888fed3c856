"""`aart baseline`: Perez et al. generators (zero-shot, stochastic few-shot) for comparison."""

from __future__ import annotations

from typing import Literal, cast

import click

from .. import pipeline
from .common import base_url_option, echo_kv, no_cache_option


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
@base_url_option
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
    base_url: str | None,
) -> None:
    """Generate a baseline dataset (zero-shot or stochastic few-shot, Perez et al. 2022) into
    OUT/dataset.jsonl, to compare with AART on the same model and token budget."""
    stats = pipeline.baseline(
        cast(Literal["zero-shot", "few-shot"], method),  # click.Choice has checked it
        model=model,
        out=out,
        n=n,
        pool=pool,
        shots=shots,
        temperature=temperature,
        seed=seed,
        no_cache=no_cache,
        base_url=base_url,
    )
    click.echo(f"baseline {method}: {out}/dataset.jsonl")
    echo_kv(
        [
            ("prompts", f"{stats.prompts} of {stats.requested} samples"),
            ("blanks removed", stats.blanks),
            ("refusals removed", stats.refusals),
            ("tokens", f"{stats.tokens:,}"),
            ("tokens per valid prompt", f"{stats.tokens_per_valid_prompt:.1f}"),
        ]
        + ([("failed samples", f"{stats.failed} (re-run to retry them)")] if stats.failed else [])
    )
