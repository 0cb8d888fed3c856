"""Options and output helpers shared by the commands."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

model_option = click.option(
    "--model",
    "-m",
    default=None,
    metavar="PROVIDER/MODEL",
    help="Override the recipe's model for every stage, e.g. openai/gpt-4o-mini or local/default.",
)
base_url_option = click.option(
    "--base-url",
    default=None,
    metavar="URL",
    help="Endpoint for openai/... models, overriding the recipe's; being your choice, it "
    "receives $OPENAI_API_KEY.",
)
no_cache_option = click.option(
    "--no-cache", is_flag=True, help="Bypass the response cache (calls are still recorded)."
)
size_option = click.option(
    "--size", default=None, help="Apply one of the recipe's named sizes (e.g. small)."
)


@contextlib.contextmanager
def progress_bars() -> Iterator[Callable[[str, int], Callable[[], None]]]:
    """Yields ``start(label, total) -> tick``; bars go to stderr and vanish when not a TTY."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
        disable=not sys.stderr.isatty(),
    ) as bars:

        def start(label: str, total: int) -> Callable[[], None]:
            task = bars.add_task(label, total=total)
            return lambda: bars.advance(task)

        yield start


def echo_kv(pairs: list[tuple[str, Any]]) -> None:
    width = max(len(k) for k, _ in pairs)
    for k, v in pairs:
        click.echo(f"  {k:<{width}}  {v}")


def generation_lines(s: Any) -> list[tuple[str, Any]]:
    """What `aart run` and `aart generate` report about Step 3 (a GenerateStats)."""
    faithful = ", ".join(
        f"{dim} {f['passed']}/{f['checked']}"
        + (f" ({f['rate']:.0%})" if f["rate"] is not None else "")
        for dim, f in s.faithfulness.items()
        if f["method"] != "none"
    )
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(s.rejection_reasons.items()))
    return [
        (
            "prompts",
            f"{s.prompts} of {s.requested} cells filled"
            + (f" (SHORT by {s.shortfall})" if s.shortfall else ""),
        ),
        ("valid items", f"{s.valid_items}/{s.items} ({s.valid_rate:.1%})"),
        ("faithful to cell", faithful or "not verified"),
        (
            "rejected",
            f"{s.unfaithful_items} of {s.valid_items} valid items ({s.rejection_rate:.0%})"
            + (f": {reasons}" if reasons else "")
            + " (replaced by top-ups)",
        ),
        ("duplicates", f"{s.exact_duplicates} exact, {s.near_duplicates} near (removed)"),
        ("refusals", f"{s.refused_items} items, {s.refused_calls} whole answers (topped up)"),
        (
            "unusable",
            f"{s.invalid_calls} answers without JSON, {s.missing_items} queries left out",
        ),
        ("jobs", f"{s.jobs} ({s.topup_jobs} top-up)"),
    ] + failed_job_lines(s.failed_jobs)


def usage_line(u: dict[str, Any]) -> str:
    """Calls, tokens and cost as :meth:`RunDB.call_totals` gives them."""
    return (
        f"{u['calls']} paid calls, {u['prompt_tokens'] + u['completion_tokens']:,} tokens, "
        f"${u['cost']:.4f}"
    )


def failed_job_lines(failed: list[dict[str, str]], show: int = 3) -> list[tuple[str, Any]]:
    """The jobs that failed for good, the first few with their reason."""
    if not failed:
        return []
    rows: list[tuple[str, Any]] = [
        ("failed jobs", f"{len(failed)} (re-run the same command to retry them)")
    ]
    rows += [(f"  {f['job']}", f["reason"][:160]) for f in failed[:show]]
    return rows


def echo_samples(dataset: Any, n: int = 5) -> None:
    """Print ``n`` prompts spread over the dataset, each with its cell."""
    from ..store.export import read_jsonl

    if not dataset.exists():
        return
    rows = list(read_jsonl(dataset))
    if not rows:
        return
    step = max(1, len(rows) // n)
    click.echo(f"sample prompts ({min(n, len(rows))} of {len(rows)}):")
    for r in rows[::step][:n]:
        cell = "; ".join(f"{k}: {v}" for k, v in (r.get("cell") or {}).items())
        click.echo(f"  [{cell}]")
        click.echo(f"    {r['prompt']}")
