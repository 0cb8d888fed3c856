"""Entry point: wires the command modules and turns expected errors into short messages."""

from __future__ import annotations

import logging
import sys

import click

from .. import __version__
from ..errors import AartError
from ..textsafe import install_safe_output
from .attack_cmd import attack_command, rejudge_command
from .baseline_cmd import baseline_command
from .batch_cmd import batch_command
from .common import storage_error
from .endpoints_cmd import endpoints_command
from .evaluate_cmd import evaluate_command
from .export_cmd import export_command
from .import_cmd import import_command
from .recipes_cmd import init_command, recipes_command
from .review_cmd import review_command
from .run_cmd import run_command
from .search_cmd import search_command
from .steps_cmd import define_command, generate_command, scope_command
from .topup_cmd import topup_command
from .values_cmd import values_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aart")
def cli() -> None:
    """aart: AI-assisted red-teaming. Write a recipe, get a diverse, annotated adversarial
    prompt dataset for your LLM application."""


for command in (
    run_command,
    define_command,
    scope_command,
    generate_command,
    evaluate_command,
    attack_command,
    rejudge_command,
    search_command,
    topup_command,
    values_command,
    baseline_command,
    batch_command,
    recipes_command,
    init_command,
    endpoints_command,
    review_command,
    export_command,
    import_command,
):
    cli.add_command(command)


class _Notes(logging.Handler):
    """The library's notes (a change of model, ...) as `note: ...` lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"note: {record.getMessage()}", err=True)


def main() -> None:
    # Everything printed goes through one filter: model output, dataset values, target
    # replies and servers' error text are untrusted, and must not drive the terminal.
    install_safe_output()
    log = logging.getLogger("aart")
    if not log.handlers:
        log.addHandler(_Notes())
        log.setLevel(logging.INFO)
        log.propagate = False
    try:
        cli.main(standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        click.echo(
            "\ninterrupted: finished work is saved; re-run the same command to resume", err=True
        )
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except AartError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)
    except Exception as e:  # a read-only or full disk: one line, not a traceback
        said = storage_error(e)
        if said is None:
            raise
        click.echo(f"error: {said[0]}", err=True)
        sys.exit(said[1])


if __name__ == "__main__":
    main()
