"""`aart recipes` and `aart init`: the built-in recipes."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import yaml

from ..errors import UsageError
from ..recipe import builtin_recipes


@click.command("recipes")
def recipes_command() -> None:
    """List the built-in recipes."""
    for name, path in sorted(builtin_recipes().items()):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        sizes = ", ".join(data.get("sizes", {})) or "-"
        click.echo(f"{name:<24} {data.get('description', '')}  [sizes: {sizes}]")


@click.command("init")
@click.argument("name")
@click.option("--to", "dest", default=None, help="Destination file (default: NAME.yaml).")
@click.option("--force", is_flag=True, help="Overwrite the destination if it exists.")
def init_command(name: str, dest: str | None, force: bool) -> None:
    """Copy built-in recipe NAME into the current directory for editing."""
    recipes = builtin_recipes()
    if name not in recipes:
        raise UsageError(
            f"no built-in recipe {name!r}; choose one of: {', '.join(sorted(recipes))}"
        )
    target = Path(dest or f"{name}.yaml")
    if target.is_dir():
        target = target / f"{name}.yaml"
    if target.exists() and not force:
        raise UsageError(f"{target} exists; choose another --to, or overwrite it with --force")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(recipes[name], target)
    click.echo(f"wrote {target}; edit it, then `aart run {target}`")
