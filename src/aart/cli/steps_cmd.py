"""`aart define`, `aart scope`, `aart generate`: the three steps one at a time, so a human can
edit the artifacts in between."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import pipeline
from ..errors import INCOMPLETE_EXIT_CODE
from ..llm.batch import BatchSettings
from ..llm.ray_executor import RaySettings
from .common import (
    base_url_option,
    echo_kv,
    echo_samples,
    generation_lines,
    incomplete_line,
    min_fill_option,
    mix_models_option,
    model_option,
    no_cache_option,
    progress_bars,
    scale_options,
    size_option,
    usage_line,
)


@click.command("define")
@click.argument("recipe")
@click.option("--out", "-o", default=None, help="Run directory (default: runs/<recipe>[-size]).")
@model_option
@size_option
@no_cache_option
@click.option("--force", is_flag=True, help="Re-enumerate even dimensions whose file exists.")
@base_url_option
def define_command(
    recipe: str,
    out: str | None,
    model: str | None,
    size: str | None,
    no_cache: bool,
    force: bool,
    base_url: str | None,
) -> None:
    """Step 1: enumerate each dimension's values into RUN/dimensions/*.yaml."""
    counts = pipeline.define(
        recipe, out, model=model, size=size, no_cache=no_cache, force=force, base_url=base_url
    )
    root = out or pipeline.default_out(recipe, size)
    click.echo(f"dimensions written to {root}/dimensions/ (edit them, then `aart scope {root}`):")
    echo_kv([(name, f"{n} values") for name, n in counts.items()])


@click.command("scope")
@click.argument("run_dir", type=click.Path(file_okay=False))
@model_option
@click.option(
    "--force", is_flag=True, help="Rebuild the blueprint even if it exists (drops edits)."
)
def scope_command(run_dir: str, model: str | None, force: bool) -> None:
    """Step 2: filter the value lists and write RUN/blueprint.jsonl (the data mix)."""
    plan = pipeline.scope(run_dir, model=model, force=force)
    click.echo(f"blueprint: {run_dir}/blueprint.jsonl (edit it, then `aart generate {run_dir}`)")
    for line in plan.summary_lines():
        click.echo(f"  {line}")


@click.command("generate")
@click.argument("run_dir", type=click.Path(file_okay=False))
@model_option
@no_cache_option
@base_url_option
@mix_models_option
@min_fill_option
@scale_options
def generate_command(
    run_dir: str,
    model: str | None,
    no_cache: bool,
    base_url: str | None,
    mix_models: bool,
    min_fill: float,
    batch: BatchSettings | None,
    ray: RaySettings | None,
) -> None:
    """Step 3: generate the dataset for RUN/blueprint.jsonl; resumes finished attempts. Uses
    the model the run was made with, unless --model says otherwise."""
    with progress_bars() as bars:
        s = pipeline.generate(
            run_dir,
            model=model,
            no_cache=no_cache,
            progress=bars,
            base_url=base_url,
            mix_models=mix_models,
            batch=batch,
            ray=ray,
        )
    incomplete = incomplete_line(s, min_fill)
    if incomplete:  # first, so neither a reader nor a CI log can miss it
        click.echo(incomplete)
    click.echo(f"dataset: {run_dir}/dataset.jsonl")
    echo_kv([*generation_lines(s), ("spent now", usage_line(s.spent_now))])
    echo_samples(Path(run_dir) / "dataset.jsonl")
    if incomplete:
        sys.exit(INCOMPLETE_EXIT_CODE)
