"""`aart run`: the main job, define -> scope -> generate in one go."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .. import pipeline
from ..errors import INCOMPLETE_EXIT_CODE, BudgetError, UsageError
from ..llm.batch import BatchSettings
from ..llm.ray_executor import RaySettings
from ..steps.scope import Plan
from ..store.rundir import Run
from .common import (
    base_url_option,
    echo_kv,
    echo_samples,
    failures_note,
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


def dry_run_text(e: dict[str, Any]) -> str:
    """The dry run's estimate for a person."""
    if e["cost"] is None:
        cost = "unpriced (add prices: to the recipe)"
    else:
        cost = f"${e['cost']:.4f}" if e["cost"] else "$0 (no paid model)"
    if e.get("batch"):
        cost += " (Step 3 at the batch price)"
        time = "the server's batch window (up to 24h)"
    elif e["seconds"] is None:
        time = "unknown (set models.tokens_per_second)"
    else:
        m, s = divmod(int(e["seconds"]), 60)
        h, m = divmod(m, 60)
        time = f"~{h}h{m:02d}m" if h else f"~{m}m{s:02d}s"
    budget = {k: v for k, v in e["budget"].items() if v is not None}
    lines = [
        f"plan for {e['recipe']}" + (f" (size {e['size']})" if e["size"] else ""),
        f"  Step 1  {e['define_calls']} calls, ~{e['define_tokens']:,} tokens on "
        f"{e['define_model']}",
        f"  Step 3  {e['attempts']} attempts -> {e['expected_prompts']} prompts, "
        f"{e['generate_calls']} calls, ~{e['generate_prompt_tokens']:,} tokens in and "
        f"~{e['generate_completion_tokens']:,} out on {e['model']} (top-ups not counted)",
        *(
            [
                f"          verification: {e['verify_calls']} calls, "
                f"~{e['verify_tokens']:,} tokens on {e['verify_model']}"
            ]
            if e.get("verify_calls")
            else []
        ),
        f"  total   {e['total_calls']} calls, ~{e['total_tokens']:,} tokens",
        f"  cost    {cost}",
        f"  time    {time}",
        "  budget  "
        + (", ".join(f"{k} {v}" for k, v in budget.items()) if budget else "none set")
        + (" -- OVER" if e["over_budget"] else (" -- within" if budget else "")),
    ]
    return "\n".join(lines)


@click.command("run")
@click.argument("recipe")
@model_option
@click.option("--out", "-o", default=None, help="Run directory (default: runs/<recipe>[-size]).")
@size_option
@no_cache_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Estimate calls, tokens, cost and time, check the budget; spend nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: the estimate as JSON.")
@click.option(
    "--set-aside-old",
    is_flag=True,
    help="When --out holds a run of a different recipe (edited, or changed by an upgrade), "
    "move it to OUT.old-N and start over instead of refusing; a run of the same recipe "
    "resumes as always. `make demo` uses it.",
)
@base_url_option
@mix_models_option
@min_fill_option
@scale_options
def run_command(
    recipe: str,
    model: str | None,
    out: str | None,
    size: str | None,
    no_cache: bool,
    dry_run: bool,
    as_json: bool,
    set_aside_old: bool,
    base_url: str | None,
    mix_models: bool,
    min_fill: float,
    batch: BatchSettings | None,
    ray: RaySettings | None,
) -> None:
    """Run the three AART steps on RECIPE (a path or a built-in name, see `aart recipes`).

    Running the same command again on the same --out resumes instead of starting over; run
    beside another `aart run` of the same --out, it waits for Steps 1 and 2, then splits Step
    3's jobs with it.
    """
    if as_json and not dry_run:  # it started a whole (perhaps paid) run, --json ignored
        raise click.UsageError("--json goes with --dry-run (the estimate as JSON)")
    if dry_run:
        est = pipeline.dry_run(recipe, model=model, size=size, batch=batch is not None)
        click.echo(json.dumps(est, indent=2) if as_json else dry_run_text(est))
        if est["over_budget"]:
            click.echo(f"over budget: {'; '.join(est['over_budget'])}", err=True)
            sys.exit(BudgetError.exit_code)
        # the refusal the real run would meet, said now (the directory is only read)
        refused = Run.refusal(out or pipeline.default_out(recipe, size), recipe, size)
        if refused and set_aside_old:
            click.echo(f"note: {refused.split('; what differs')[0]}; the run would move it aside")
        elif refused:
            click.echo(f"error: {refused}", err=True)
            sys.exit(UsageError.exit_code)
        return

    if set_aside_old:
        where = out or pipeline.default_out(recipe, size)
        moved = Run.set_aside(where, recipe, size)
        if moved is not None:
            click.echo(f"note: {where} held a run of a different recipe; moved to {moved}")

    def show_plan(plan: Plan) -> None:
        click.echo("blueprint:")
        for line in plan.summary_lines():
            click.echo(f"  {line}")

    with progress_bars() as bars:
        result = pipeline.run(
            recipe,
            out=out,
            model=model,
            base_url=base_url,
            mix_models=mix_models,
            size=size,
            no_cache=no_cache,
            progress=bars,
            on_plan=show_plan,
            batch=batch,
            ray=ray,
        )
    s, u = result.stats, result.usage
    incomplete = incomplete_line(s, min_fill)
    if incomplete:  # first, so neither a reader nor a CI log can miss it
        click.echo(f"\n{incomplete}")
    click.echo(f"\naart run finished in {result.seconds:.1f}s: {result.root}")
    for name, d in result.define_report.items():
        if d["short"]:
            click.echo(
                f"  Step 1: {name} is SHORT by {d['short']} ({d['values']} of {d['requested']} "
                f"values; {len(d['rejected'])} candidates rejected, see "
                f"{result.root}/dimensions/{name}.yaml)"
            )
    now = result.spent_now
    echo_kv(
        [
            *generation_lines(s),
            ("spent now", usage_line(now) + " (this invocation; a resume re-pays nothing)"),
            ("run total", usage_line(u) + failures_note(u)),
            (
                "tokens",
                f"{u['prompt_tokens']:,} in, {u['completion_tokens']:,} out (run total)",
            ),
            (
                "tokens per prompt",
                f"{result.tokens_per_prompt:,.0f}" if s.prompts else "n/a (no prompt kept)",
            ),
        ]
    )
    click.echo("outputs:")
    for name, path in result.outputs.items():
        click.echo(f"  {name:<18} {path}")
    echo_samples(result.root / "dataset.jsonl")
    if incomplete:
        sys.exit(INCOMPLETE_EXIT_CODE)
