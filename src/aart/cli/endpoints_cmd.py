"""`aart endpoints`: which hosts may receive which secrets from the environment."""

from __future__ import annotations

import click

from ..llm import endpoints
from ..llm.endpoints import DEFAULT_KEY_ENV


@click.group("endpoints")
def endpoints_command() -> None:
    """Bind environment variables holding secrets to the hosts allowed to receive them.

    Recipes and target files are shared documents: they may name any host, so a secret goes
    only to a host you bound it to here (or to your OPENAI_BASE_URL, or a --base-url flag)."""


@endpoints_command.command("allow")
@click.argument("url")
@click.option("--key-env", default=DEFAULT_KEY_ENV, show_default=True, metavar="VAR")
def allow_command(url: str, key_env: str) -> None:
    """Let URL's host (scheme, host and port) receive $VAR."""
    path = endpoints.allow(url, key_env)
    click.echo(f"${key_env} may now be sent to {endpoints.origin(url)} ({path})")


@endpoints_command.command("forget")
@click.argument("url")
@click.option("--key-env", default=None, metavar="VAR", help="Only this variable's binding.")
def forget_command(url: str, key_env: str | None) -> None:
    """Remove URL's bindings."""
    n = endpoints.forget(url, key_env)
    click.echo(f"removed {n} binding(s) of {endpoints.origin(url)}")


@endpoints_command.command("list")
def list_command() -> None:
    """Show every binding, the built-in ones included."""
    for o, env in sorted(endpoints.user_bindings()):
        click.echo(f"{o}  ${env}")
    click.echo(f"(file: {endpoints.config_path()})")
