"""`aart batch`: Step 3 through files, for `vllm run-batch` on a GPU node (or any tool that
reads and writes the OpenAI batch format)."""

from __future__ import annotations

from pathlib import Path

import click

from .. import pipeline
from ..llm.batch import BatchQueue
from ..store.rundir import Run
from .common import echo_kv, generation_lines, model_option


@click.group("batch")
def batch_command() -> None:
    """Generate through batch files: `export` writes the requests Step 3 needs, `vllm
    run-batch` (or another engine) answers them, `import` stores the answers and exports what
    comes next, until the dataset is written. (`aart run/generate --batch` does the same
    through a server's batch API.)"""


def _report(run_dir: str, result: pipeline.BatchFiles) -> None:
    if result.imported is not None:
        stored, left = result.imported
        click.echo(
            f"imported {stored} answers" + (f"; {left} requests without one" if left else "")
        )
    for path, model, n in result.exported:
        served = model.split("/", 1)[-1]
        click.echo(f"wrote {n} requests for {model} to {path}")
        click.echo(
            f"  vllm run-batch -i {path} -o {path.with_name('results-' + path.name)} --model {served}"
        )
        click.echo(f"  aart batch import {run_dir} {path.with_name('results-' + path.name)}")
    if result.waiting:
        click.echo(
            f"{result.waiting} requests exported earlier still wait for their answers: "
            f"`aart batch import {run_dir} RESULTS`"
        )
    if result.stats is not None:
        click.echo(f"nothing more to ask; dataset: {run_dir}/dataset.jsonl")
        echo_kv(generation_lines(result.stats))


@batch_command.command("export")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--out", "-o", default=None, help="File to write (default: RUN/batches/requests-N.jsonl)."
)
@model_option
def export_command(run_dir: str, out: str | None, model: str | None) -> None:
    """Write the requests Step 3 needs next, in the OpenAI batch input format."""
    _report(run_dir, pipeline.batch_export(run_dir, out=out, model=model))


@batch_command.command("import")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.argument("results", type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "-o", default=None, help="File for the next requests, if any.")
@model_option
def import_command(run_dir: str, results: str, out: str | None, model: str | None) -> None:
    """Store the answers in RESULTS (a `vllm run-batch` output file), go on with Step 3 and
    export the requests it needs next, or write the dataset when none are left."""
    _report(run_dir, pipeline.batch_export(run_dir, out=out, model=model, import_from=results))


@batch_command.command("status")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
def status_command(run_dir: str) -> None:
    """The run's batches and its requests by state."""
    with Run.open(run_dir, lock=False) as run:
        queue = BatchQueue(run.db)
        batches = queue.tables.all()
        counts = queue.tables.counts()
    for b in batches:
        status = b.info.get("status", "exported" if b.id.startswith("export:") else "")
        click.echo(f"{b.id}  {b.model}  {b.requests} requests  {b.state}  {status}")
    click.echo(
        "requests: "
        + ", ".join(f"{counts.get(s, 0)} {s}" for s in ("queued", "submitted", "answered"))
    )
    if not batches:
        click.echo(f"no batches in {Path(run_dir)}")
