"""The generation prompt template: Jinja in a sandbox, checked against the recipe up front."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError, UndefinedError

from ..errors import RecipeError
from .sandbox import MAX_BUILD, BoundedSandbox

if TYPE_CHECKING:
    from .located import LoadedRecipe

#: what a template may use
CONTEXT_NAMES = {"application", "values", "cells", "dimensions", "n", "fields", "attempt_id"}
_ENV = BoundedSandbox(undefined=StrictUndefined, autoescape=False)
__all__ = ["MAX_BUILD", "TemplateRefused", "check_template", "render"]


def _template_line(loaded: LoadedRecipe, lineno: int, key: str = "template") -> int | None:
    line, _ = loaded.where(("generate", key))
    if line is None:
        return None
    # A block scalar (`template: |`) starts on the line after the key.
    first = loaded.text.splitlines()[line - 1].rstrip()
    return line + lineno if first.endswith(("|", ">", "|-", ">-")) else line + lineno - 1


def check_template(loaded: LoadedRecipe) -> None:
    """Refuse unknown names and unknown dimensions before any call is spent, and a template
    that builds too much when rendered for a stand-in attempt."""
    g = loaded.recipe.generate
    _check(loaded, "template", g.template, CONTEXT_NAMES, ("values", "dimensions"))
    if g.cell_template is not None:
        _check(loaded, "cell_template", g.cell_template, {"cell"}, ("cell",))
    dims = list(loaded.recipe.dimensions)
    cell = {d: "value" for d in dims}
    trial = {
        "application": loaded.recipe.application.model_dump(),
        "values": {d: ["value"] for d in dims},
        "cells": [cell],
        "dimensions": {d: {"description": ""} for d in dims},
        "n": 1,
        "fields": [],
        "attempt_id": "a00001",
    }
    for key, src, context in (
        ("template", g.template, trial),
        ("cell_template", g.cell_template, {"cell": cell}),
    ):
        if src is None:
            continue
        try:
            render(src, context)
        except TemplateRefused as e:
            raise loaded.error(("generate", key), e.reason, e.fix or "") from None
        except Exception:  # noqa: BLE001, S110 - stand-in values need not fit every template
            pass


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
    fields = list(loaded.recipe.application.model_dump())
    for attr in ast.find_all(nodes.Getattr):
        # `application.nme` failed only in Step 3, as "'dict object' has no attribute 'nme'"
        if isinstance(attr.node, nodes.Name) and attr.node.name == "application":
            if attr.attr not in fields:
                near = difflib.get_close_matches(attr.attr, fields, n=1)
                raise RecipeError(
                    f"generate.{key}: `application.{attr.attr}` is not a field of application",
                    file=str(loaded.path),
                    line=_template_line(loaded, attr.lineno, key),
                    fix=(f"did you mean `application.{near[0]}`? " if near else "")
                    + f"application has: {', '.join(fields)}",
                )
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


class TemplateRefused(RecipeError):
    """The sandbox refused what a template tried: Python internals, or building too much."""

    def __init__(self, reason: str, *, fix: str) -> None:
        self.reason = reason
        super().__init__(reason, fix=fix)


def render(
    template: str,
    context: dict[str, Any],
    env: BoundedSandbox | None = None,
    where: str = "generate.template",
) -> str:
    """Render in the bounded sandbox; attempts to reach Python internals, to build more than
    MAX_BUILD characters or to run too long raise TemplateRefused."""
    env = env or _ENV
    token = env.start()
    try:
        return env.from_string(template).render(**context)
    except SecurityError as e:
        raise TemplateRefused(
            f"the template tried something unsafe and was refused: {e}",
            fix="templates may only read the values they are given, and build little",
        ) from None
    except (MemoryError, RecursionError, OverflowError) as e:
        # MemoryError and RecursionError are Exceptions too: never let a caller's
        # `except Exception` take them for a stand-in value that does not fit
        what = {
            MemoryError: "needs more memory than there is",
            RecursionError: "calls itself too deeply",
        }.get(type(e), f"builds too large a value ({e})")
        raise TemplateRefused(
            f"the template {what} and was refused",
            fix="templates may only read the values they are given, and build little",
        ) from None
    except UndefinedError as e:
        raise RecipeError(f"{where}: {e.message}") from None
    except TemplateSyntaxError as e:
        raise RecipeError(f"{where}: {e.message} (template line {e.lineno})") from None
    finally:
        env.finish(token)
