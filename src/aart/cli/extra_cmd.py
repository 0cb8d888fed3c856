"""`aart baseline` (Perez et al. generators for comparison) and `aart topup` (close gaps)."""

from __future__ import annotations

from collections import Counter
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
    result = pipeline.topup(
        run_dir,
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


@click.command("values")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--attack",
    "attack_dir",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="An attack of the run's dataset (its --out): adds how many prompts of each value "
    "were attacked and judged (with strategies: prompt x strategy pairs).",
)
def values_command(run_dir: str, attack_dir: str | None) -> None:
    """Per dimension and value: planned, generated, mentioned (keywords) and attacked, and
    why a value is missing: filtered out, never planned, or planned but missing."""
    view = pipeline.values(run_dir, attack=attack_dir)
    units = {r["attacked_unit"] for rows in view.values() for r in rows if r["attacked_unit"]}
    for unit in sorted(units):
        click.echo(f"attacked: {unit}")
    for dim, rows in view.items():
        statuses = Counter(r["status"] for r in rows)
        click.echo(
            f"{dim}: {len(rows)} values; "
            + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        )
        width = max(len(r["value"]) for r in rows)
        attacked = attack_dir is not None
        click.echo(
            f"  {'value':<{width}}  {'status':<19} planned generated mentioned"
            + (" attacked" if attacked else "")
        )
        for r in rows:
            click.echo(
                f"  {r['value']:<{width}}  {r['status']:<19} {r['planned']:>7} "
                f"{r['generated']:>9} {r['mentioned']:>9}"
                + (f" {r['attacked']:>8}" if attacked else "")
            )
