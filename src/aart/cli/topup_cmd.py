"""`aart topup`: append attempts for the values a run's dataset under-covers."""

from __future__ import annotations

import click

from .. import pipeline


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
    added, pending = result["attempts_added"], result["attempts_pending"]
    if not any(result["gaps"].values()):
        click.echo("no under-covered values: nothing to add")
    elif added:
        click.echo(
            f"added {added} attempts ({result['queries_added']} queries) to "
            f"{run_dir}/blueprint.jsonl; run `aart generate {run_dir}` to fill them"
        )
    if pending:
        # run again before generating: the same gaps, whose attempts are already there
        click.echo(
            f"{pending} attempts for these gaps are in {run_dir}/blueprint.jsonl already, "
            f"not yet generated; run `aart generate {run_dir}` to fill them"
        )
