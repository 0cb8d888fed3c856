"""The generation prompt template: Jinja in a sandbox, checked against the recipe up front."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..errors import RecipeError

if TYPE_CHECKING:
    from .loader import LoadedRecipe

#: what a template may use
CONTEXT_NAMES = {"application", "values", "cells", "dimensions", "n", "fields", "attempt_id"}
_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


def _template_line(loaded: LoadedRecipe, lineno: int, key: str = "template") -> int | None:
    line, _ = loaded.where(("generate", key))
    if line is None:
        return None
    # A block scalar (`template: |`) starts on the line after the key.
    first = loaded.text.splitlines()[line - 1].rstrip()
    return line + lineno if first.endswith(("|", ">", "|-", ">-")) else line + lineno - 1


def check_template(loaded: LoadedRecipe) -> None:
    """Refuse unknown names and unknown dimensions before any call is spent."""
    g = loaded.recipe.generate
    _check(loaded, "template", g.template, CONTEXT_NAMES, ("values", "dimensions"))
    if g.cell_template is not None:
        _check(loaded, "cell_template", g.cell_template, {"cell"}, ("cell",))


def _check(
    loaded: LoadedRecipe, key: str, src: str, allowed: set[str], by_dimension: tuple[str, ...]
) -> None:
    path = ("generate", key)
    try:
        ast = _ENV.parse(src)
    except TemplateSyntaxError as e:
        raise RecipeError(
            f"generate.{key}: {e.message}",
            file=str(loaded.path),
            line=_template_line(loaded, e.lineno or 1, key),
            fix="fix the Jinja syntax",
        ) from None
    unknown = meta.find_undeclared_variables(ast) - allowed
    if unknown:
        raise loaded.error(
            path,
            f"the template uses unknown name(s): {', '.join(sorted(unknown))}",
            f"generate.{key} may use: {', '.join(sorted(allowed))}",
        )
    dims = loaded.recipe.dimensions
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        target = getattr(node, "node", None)
        if not (isinstance(target, nodes.Name) and target.name in by_dimension):
            continue
        if isinstance(node, nodes.Getattr):
            name = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            name = node.arg.value
        else:
            continue
        if name not in dims:
            raise RecipeError(
                f"generate.{key}: `{target.name}.{name}` names unknown dimension {name!r}",
                file=str(loaded.path),
                line=_template_line(loaded, node.lineno, key),
                fix=f"use one of: {', '.join(dims)}",
            )


def render(template: str, context: dict[str, Any]) -> str:
    """Render in the sandbox; attempts to reach Python internals raise RecipeError."""
    try:
        return _ENV.from_string(template).render(**context)
    except SecurityError as e:
        raise RecipeError(
            f"generate.template tried something unsafe and was refused: {e}",
            fix="templates may only read the values they are given",
        ) from None
    except UndefinedError as e:
        raise RecipeError(f"generate.template: {e.message}") from None
