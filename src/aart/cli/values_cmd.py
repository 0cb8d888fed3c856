"""`aart values`: per dimension and value, planned, generated, mentioned and attacked."""

from __future__ import annotations

from collections import Counter

import click

from .. import pipeline


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
        width = max([len("value")] + [len(r["value"]) for r in rows])
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
