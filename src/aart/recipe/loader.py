"""Load a recipe file with errors located at file:line:column."""

from __future__ import annotations

import copy
import difflib
import functools
import sys
import typing
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import RecipeError
from .located import OPERATIONAL_MODEL_KEYS as OPERATIONAL_MODEL_KEYS  # kept importable
from .located import LoadedRecipe, _located
from .models import AtKey, Recipe, cross_check
from .models import Path as KeyPath
from .yamlsafe import load_bounded

BUILTIN_PACKAGE = "aart.recipes"


def builtin_recipes() -> dict[str, Path]:
    root = resources.files(BUILTIN_PACKAGE)
    return {Path(str(p)).stem: Path(str(p)) for p in root.iterdir() if str(p).endswith(".yaml")}


def resolve_recipe_path(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.is_file():
        return path
    builtins = builtin_recipes()
    if str(name_or_path) in builtins:
        return builtins[str(name_or_path)]
    raise RecipeError(
        f"no recipe file {str(name_or_path)!r} and no built-in recipe of that name",
        fix=f"give a path to a .yaml file, or one of: {', '.join(sorted(builtins))} "
        "(see `aart recipes`)",
    )


def key_locations(node: yaml.Node | None) -> dict[KeyPath, tuple[int, int]]:
    """(line, column) of every key path of a composed YAML document (a recipe's, a dimension
    file's), for errors that name where the mistake is."""
    out: dict[KeyPath, tuple[int, int]] = {}
    if node is not None:
        _locations(node, (), out)
    return out


def _locations(node: yaml.Node, path: KeyPath, out: dict[KeyPath, tuple[int, int]]) -> None:
    out[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            out[path + (key,)] = (k.start_mark.line + 1, k.start_mark.column + 1)
            _locations(v, path + (key,), out)
            out[path + (key,)] = (k.start_mark.line + 1, k.start_mark.column + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _locations(v, path + (i,), out)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` merged in, maps key by key; an override's ``null`` removes
    the base's key (so a size can drop a setting, such as ``scope.primary`` under another
    mix, and get its default back)."""
    out = copy.deepcopy(base)
    for k, v in override.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def recipe_differences(a: LoadedRecipe, b: LoadedRecipe, limit: int = 5) -> list[str]:
    """The dotted keys whose values differ between two recipes' identities (a few)."""
    out: list[str] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                walk(x.get(k), y.get(k), f"{path}.{k}" if path else str(k))
        elif x != y:
            out.append(path or "(everything)")

    walk(a.identity(), b.identity(), "")
    return out


#: recipes are shared documents: a bound keeps a hostile one from exhausting memory
MAX_RECIPE_BYTES = 1_000_000

_FIXES = {
    "extra_forbidden": "remove this key or correct its spelling (see docs/recipe-reference.md)",
    "missing": "add this key",
    "string_type": "write a string (quote it if it looks like a number or yes/no)",
    "int_parsing": "write a whole number",
    "int_type": "write a whole number",
    "int_from_float": "write a whole number",
    "float_type": "write a number",
    "bool_parsing": "write true or false",
    "bool_type": "write true or false",
    "float_parsing": "write a number",
    "literal_error": "use one of the allowed values",
    "list_type": "write a list (`- item` lines or [a, b])",
    "dict_type": "write a mapping (`key: value` lines)",
    "model_type": "write a mapping (`key: value` lines)",
}


#: pydantic's bound errors: (type, the bound's key in ctx, how to say it)
_BOUNDS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
}


def _bound_fix(err: Mapping[str, Any]) -> str | None:
    """``use a number at least 1`` for a number out of its bounds."""
    bound = _BOUNDS.get(err["type"])
    ctx = err.get("ctx") or {}
    if bound is None or bound[0] not in ctx:
        return None
    return f"use a number {bound[1]} {ctx[bound[0]]}"


@functools.cache
def recipe_keys() -> frozenset[str]:
    """Every key a recipe's models know, at any depth (for "did you mean")."""
    seen: set[type] = set()
    keys: set[str] = set()

    def walk(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp in seen:
                return
            seen.add(tp)
            for name, field in tp.model_fields.items():
                keys.add(field.alias or name)
                walk(field.annotation)
            return
        for arg in typing.get_args(tp):
            walk(arg)

    walk(Recipe)
    return frozenset(keys)


#: keys renamed in the recipe: (section, old name, new name). The old name is still read, with
#: a note naming its line, so a recipe written before the rename keeps working.
RENAMED_KEYS = (("scope", "strategy", "mix"),)  # "strategy" is for attacks only
_noted: set[str] = set()  # each old key is noted once per process, however many loads


def _rename_old_keys(
    data: dict[str, Any], path: Path, locations: dict[KeyPath, tuple[int, int]]
) -> None:
    """Move each old key to its new name, in the recipe and in each of its sizes."""
    sizes = data.get("sizes")
    places: list[KeyPath] = [()]
    if isinstance(sizes, dict):
        places += [("sizes", name) for name in sizes]
    for section, old, new in RENAMED_KEYS:
        for place in places:
            holder: Any = data
            for part in place:
                holder = holder[part]
            block = holder.get(section) if isinstance(holder, dict) else None
            if not isinstance(block, dict) or old not in block:
                continue
            at = (*place, section, old)
            if new in block:
                raise _located(
                    path,
                    locations,
                    at,
                    f"`{old}` is the old name of `{new}`; both are given",
                    f"keep only `{new}:`",
                )
            block[new] = block.pop(old)
            if f"{section}.{old}" not in _noted:
                _noted.add(f"{section}.{old}")
                line, column = locations.get(at, (None, None))
                where = f"{path}:{line}:{column}" if line else str(path)
                print(
                    f"{where}: note: {section}.{old} is now {section}.{new} (the old name still "
                    f"works); rename it to `{new}:`",
                    file=sys.stderr,
                )


def _validated(
    data: dict[str, Any],
    path: Path,
    locations: dict[KeyPath, tuple[int, int]],
    size_at: KeyPath,
) -> Recipe:
    """The recipe ``data`` describes, or a located error. With a size merged in, a key the
    size sets is located under ``sizes.<size>`` (where it is written), else at the top."""
    try:
        return Recipe.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
        # A misspelt required key gives both "missing" and "unknown key"; the spelling is the fix.
        err = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        loc = tuple(err["loc"])
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, AtKey):  # a section's check that knows the key at fault
            loc = (*loc, *cause.path)

        # pydantic adds union-member tags to loc; keep only the parts that exist in the file
        # (under the size first, where it sets the key)
        def within(base: KeyPath) -> list[str | int]:
            found: list[str | int] = []
            for part in loc:
                if base + tuple(found) + (part,) in locations or isinstance(part, int):
                    found.append(part)
            return found

        top = within(())
        under = within(size_at) if size_at else []
        # the size's own key when it sets (or misspells) the one at fault
        clean = [*size_at, *under] if under and len(under) >= len(top) else top
        others = len(errors) - 1
        more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
        msg = err["msg"]
        fix = _FIXES.get(err["type"]) or _bound_fix(err)
        if err["type"] == "extra_forbidden":
            msg = f"unknown key {loc[-1]!r}"
            near = difflib.get_close_matches(str(loc[-1]), sorted(recipe_keys()), 1, 0.75)
            if near:
                fix = (
                    f"did you mean {near[0]!r}? Else remove this key (see docs/recipe-reference.md)"
                )
        elif err["type"] == "missing":
            msg = f"missing required key {loc[-1]!r}"
        raise _located(path, locations, tuple(clean), msg + more, fix) from None


def load_recipe(name_or_path: str | Path, size: str | None = None) -> LoadedRecipe:
    """Load and validate a recipe (path or built-in name), optionally applying a named size."""
    path = resolve_recipe_path(name_or_path)
    raw = path.read_bytes()
    if len(raw) > MAX_RECIPE_BYTES:
        raise RecipeError(
            f"the file is {len(raw):,} bytes; a recipe may have at most {MAX_RECIPE_BYTES:,}",
            file=str(path),
            fix="move long lists into the dimension files of a run, or shorten the recipe",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise RecipeError(
            f"not UTF-8 text (byte 0x{raw[e.start]:02x})",
            file=str(path),
            line=line,
            column=column,
            fix="save the recipe as UTF-8",
        ) from None
    # bounded: a shared recipe's aliases or nesting must not exhaust memory or the stack
    node, data = load_bounded(text, str(path))
    locations = key_locations(node)
    if not isinstance(data, dict):
        raise RecipeError(
            "a recipe is a YAML mapping", file=str(path), line=1, fix="start with `name: ...`"
        )
    _rename_old_keys(data, path, locations)
    sizes = data.get("sizes") or {}
    if size is not None and size not in sizes:
        raise RecipeError(
            f"recipe has no size {size!r}",
            file=str(path),
            line=locations.get(("sizes",), (None,))[0],
            fix=f"use one of: {', '.join(sizes) or '(none defined)'}, or drop --size",
        )
    if size is None:
        recipe = _validated(data, path, locations, ())
        # each size too: a misspelt key under sizes.small is found before anyone runs it
        for name, over in sizes.items() if isinstance(sizes, dict) else ():
            if isinstance(over, dict):
                _validated(deep_merge(data, over), path, locations, ("sizes", name))
    else:
        recipe = _validated(deep_merge(data, sizes[size]), path, locations, ("sizes", size))
    loaded = LoadedRecipe(recipe, path, text, size, locations)
    for p, message, fix in cross_check(recipe):
        raise loaded.error(p, message, fix)
    from .template import check_template

    check_template(loaded)
    return loaded
