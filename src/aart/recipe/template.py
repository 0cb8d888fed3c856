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


def _template_line(loaded: LoadedRecipe, lineno: int) -> int | None:
    line, _ = loaded.where(("generate", "template"))
    if line is None:
        return None
    # A block scalar (`template: |`) starts on the line after the key.
    first = loaded.text.splitlines()[line - 1].rstrip()
    return line + lineno if first.endswith(("|", ">", "|-", ">-")) else line + lineno - 1


def check_template(loaded: LoadedRecipe) -> None:
    """Refuse unknown names and unknown dimensions before any call is spent."""
    src = loaded.recipe.generate.template
    path = ("generate", "template")
    try:
        ast = _ENV.parse(src)
    except TemplateSyntaxError as e:
        raise RecipeError(
            f"generate.template: {e.message}",
            file=str(loaded.path),
            line=_template_line(loaded, e.lineno or 1),
            fix="fix the Jinja syntax",
        ) from None
    unknown = meta.find_undeclared_variables(ast) - CONTEXT_NAMES
    if unknown:
        raise loaded.error(
            path,
            f"the template uses unknown name(s): {', '.join(sorted(unknown))}",
            f"a template may use: {', '.join(sorted(CONTEXT_NAMES))}",
        )
    dims = loaded.recipe.dimensions
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        target = getattr(node, "node", None)
        if not (isinstance(target, nodes.Name) and target.name in ("values", "dimensions")):
            continue
        if isinstance(node, nodes.Getattr):
            key = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            key = node.arg.value
        else:
            continue
        if key not in dims:
            raise RecipeError(
                f"generate.template: `{target.name}.{key}` names unknown dimension {key!r}",
                file=str(loaded.path),
                line=_template_line(loaded, node.lineno),
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
