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
