"""`aart export`: a dataset out to promptfoo, inspect_ai, garak or Hugging Face datasets."""

from __future__ import annotations

import click

from ..data.load import parse_mapping
from ..interop import FORMATS, JUDGES, export_dataset
from .common import column_options


@click.command("export")
@click.argument("dataset", type=click.Path(exists=True))
@click.argument("out", metavar="PATH")
@click.option("--to", "to", type=click.Choice(FORMATS), required=True, help="The tool's format.")
@click.option(
    "--judge",
    "judges",
    multiple=True,
    type=click.Choice(JUDGES),
    help="Judges to carry over as promptfoo assertions / the inspect scorer (repeatable; "
    "default: refusal, plus policy when the recipe has one).",
)
@click.option(
    "--provider",
    default="echo",
    show_default=True,
    help="promptfoo: the provider the config names (echo replies with the prompt; put your "
    "application's provider here).",
)
@click.option(
    "--license",
    "license_",
    default="other",
    show_default=True,
    help="hf: the licence identifier the dataset card gives.",
)
@click.option(
    "--evaluation",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="hf: the OUT.json of `aart evaluate` whose coverage the card reports "
    "(default: evaluation.json beside the dataset, if any).",
)
@column_options
def export_command(
    dataset: str,
    out: str,
    to: str,
    judges: tuple[str, ...],
    provider: str,
    license_: str,
    evaluation: str | None,
    text_column: str,
    axes: tuple[str, ...],
    annotations: tuple[str, ...],
) -> None:
    """Write DATASET (a dataset file or a run directory) for another tool under PATH:
    promptfoo (promptfooconfig.yaml + tests.yaml), inspect (task.py + dataset.jsonl), garak
    (a probe module + prompts.json) or hf (Parquet + dataset card). `aart evaluate` and
    `aart attack` read a promptfoo tests file and an hf folder back."""
    paths = export_dataset(
        dataset,
        to,
        out,
        judges=list(judges) or None,
        provider=provider,
        license=license_,
        evaluation=evaluation,
        text_column=text_column,
        axis_columns=parse_mapping(axes, "--axis"),
        annotation_columns=parse_mapping(annotations, "--annotation"),
    )
    for p in paths:
        click.echo(f"wrote {p}")
