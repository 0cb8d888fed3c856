"""`aart evaluate`: coverage, balance, diversity and comparison for one or more datasets."""

from __future__ import annotations

import click

from ..data.load import parse_mapping
from ..evaluate import evaluate
from ..evaluate.embeddings import EMBEDDERS
from ..report import evaluation_markdown, write_evaluation_report
from .common import column_options


@click.command("evaluate")
@click.argument("dataset", type=click.Path(exists=True))
@click.option("--recipe", default=None, help="Take value lists from a recipe's explicit values.")
@click.option(
    "--run",
    "run_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Take value lists (with aliases) from a run's dimension files.",
)
@click.option(
    "--dimensions",
    default=None,
    type=click.Path(file_okay=False),
    help="A directory of <axis>.yaml or <axis>.txt value lists.",
)
@click.option(
    "--compare", multiple=True, metavar="NAME=PATH", help="Another dataset to compare (repeatable)."
)
@click.option("--report", default=None, metavar="OUT", help="Write OUT.html, OUT.md and OUT.json.")
@column_options
@click.option("--no-embeddings", is_flag=True, help="Skip the embedding-model metrics.")
@click.option(
    "--embedder",
    type=click.Choice(EMBEDDERS),
    default="minilm",
    show_default=True,
    help="minilm: all-MiniLM-L6-v2 on torch (the reference); minilm-int8: the same model in "
    "ONNX Runtime with int8 weights, built on first use (several times faster).",
)
@click.option("--seed", default=0, show_default=True, help="Seed for sampled metrics (Self-BLEU).")
@click.option("--no-topics", is_flag=True, help="Skip the topic labels and treemaps.")
@click.option(
    "--topics-by",
    type=click.Choice(["auto", "embedding", "lexical"]),
    default="auto",
    show_default=True,
    help="Label topics by embedding similarity (the embeddings extra), keywords, or auto: "
    "embeddings up to 20,000 sampled prompts, keywords beyond.",
)
@click.option(
    "--reference",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="The dataset whose diversity the Gaps section holds DATASET against (default: the "
    "released AART data's figures).",
)
def evaluate_command(
    dataset: str,
    recipe: str | None,
    run_dir: str | None,
    dimensions: str | None,
    compare: tuple[str, ...],
    report: str | None,
    text_column: str,
    axes: tuple[str, ...],
    annotations: tuple[str, ...],
    no_embeddings: bool,
    embedder: str,
    seed: int,
    no_topics: bool,
    topics_by: str,
    reference: str | None,
) -> None:
    """Evaluate DATASET (.jsonl, .csv or .parquet): keyword coverage per axis, balance,
    annotation agreement, length and diversity; with --compare, a side-by-side table."""
    ev = evaluate(
        dataset,
        recipe=recipe,
        run=run_dir,
        dimensions=dimensions,
        compare=parse_mapping(compare, "--compare", "NAME=PATH"),
        text_column=text_column,
        axis_columns=parse_mapping(axes, "--axis"),
        annotation_columns=parse_mapping(annotations, "--annotation"),
        embeddings=not no_embeddings,
        embedder=embedder,
        seed=seed,
        topics="off" if no_topics else topics_by,
        reference=reference,
    )
    click.echo(evaluation_markdown(ev))
    if report:
        paths = write_evaluation_report(ev, report)
        click.echo("report: " + ", ".join(str(p) for p in paths.values()))
