"""Generate the reference pages of docs/ from the code, so they cannot drift from it.

    python tools/gen_docs.py           # rewrite the generated blocks of the pages below
    python tools/gen_docs.py --check   # exit 1, naming the stale files, when one differs

Each page is hand-written prose with one generated block between the markers
``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name -->``; only the block is
rewritten. The sources are read from the code itself, never from a copy:

- ``cli``: the ``--help`` of every command and subcommand of ``aart.cli.main.cli`` (click);
- ``recipe``: the fields of ``aart.recipe.Recipe`` (pydantic), walked recursively: key, type,
  default, and the description from ``Field(description=...)``, else the ``#:`` comment above
  the field, else the nested model's docstring;
- ``rundb``: the schema that the migrations build, by opening a new ``RunDB`` on an in-memory
  SQLite database and reading ``sqlite_master`` (and the record kinds of ``aart.types``);
- ``layers`` (in docs/architecture.md): the ``LAYERS`` list that ``tests/test_layers.py``
  enforces.

After a change to the CLI, the recipe models, the migrations or the layers, this script is the
only thing to re-run (``tests/test_docs.py`` fails until it is).
"""

from __future__ import annotations

import argparse
import ast
import enum
import inspect
import re
import sqlite3
import sys
import textwrap
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REGENERATE = "python tools/gen_docs.py"

# ----------------------------------------------------------------------------- CLI reference
HELP_WIDTH = 100


def cli_reference() -> str:
    import click

    from aart.cli.main import cli

    out: list[str] = []

    def walk(cmd: click.Command, path: list[str], parent: click.Context | None) -> None:
        name = " ".join(path)
        # a fixed width and info name: the page is the same on every terminal and machine;
        # the root's context settings (``-h`` beside ``--help``) as an invocation gets them
        # (click caches a command's help option the first time a context asks for it, so a
        # context without them would print whatever an earlier caller saw)
        ctx = click.Context(
            cmd,
            info_name=path[-1],
            parent=parent,
            terminal_width=HELP_WIDTH,
            max_content_width=HELP_WIDTH,
            **({} if parent else cmd.context_settings),
        )
        level = "#" * (2 if len(path) <= 2 else 3)
        out.append(f"{level} `{name}`\n")
        out.append("```text")
        out.append(cmd.get_help(ctx).rstrip())
        out.append("```\n")
        if isinstance(cmd, click.Group):
            for sub_name, sub in cmd.commands.items():  # the order main.py wires them in
                if not sub.hidden:
                    walk(sub, [*path, sub_name], ctx)

    walk(cli, ["aart"], None)
    toc = []
    for name, sub in cli.commands.items():
        if not sub.hidden:
            anchor = slug(f"aart {name}")
            toc.append(f"- [`aart {name}`](#{anchor}): {sub.get_short_help_str(120)}")
    return "\n".join(toc) + "\n\n" + "\n".join(out).rstrip() + "\n"


# -------------------------------------------------------------------------- recipe reference
def _field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comments above each field (or enum member) of a class's source."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    comments: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        else:
            continue
        if isinstance(target, ast.Name):
            block: list[str] = []
            i = node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#:"):
                block.insert(0, lines[i].strip()[2:].strip())
                i -= 1
            if block:
                comments[target.id] = " ".join(block)
    return comments


def _is_model(t: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(t, type) and issubclass(t, BaseModel)


def _type_name(t: Any) -> str:
    """A short, readable form of a field's annotation."""
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if t is type(None):
        return "null"
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin in (list, tuple, set):
        return f"list[{_type_name(args[0])}]" if args else "list"
    if origin is dict:
        return f"map[{_type_name(args[0])}, {_type_name(args[1])}]" if args else "map"
    if t is Any:
        return "any"
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return " | ".join(f'"{m.value}"' for m in t)
    if _is_model(t):
        return "mapping"
    return getattr(t, "__name__", str(t))


def _bounds(info: Any) -> str:
    parts = []
    for m in info.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {v}")
        for attr in ("min_length", "max_length", "pattern"):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{attr} {v}")
    return ", ".join(parts)


def _default(info: Any) -> str:
    from pydantic_core import PydanticUndefined

    if info.is_required():
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()
    else:
        value = info.default
    if value is PydanticUndefined:
        return "required"
    if _is_model(type(value)):
        return "(see below)"
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`' if value else '`""`'
    if value in ([], {}):
        return f"`{value}`"
    return f"`{value}`"


def _nested(t: Any) -> tuple[str, Any] | None:
    """The model a field holds, and how its key path continues: ``.``, ``.<name>.`` or ``[].``."""
    if _is_model(t):
        return ".", t
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is typing.Annotated:
        return _nested(args[0])
    if origin in (typing.Union, types.UnionType):
        for a in args:
            found = _nested(a)
            if found:
                return found
        return None
    if origin is dict and len(args) == 2:
        inner = _nested(args[1])
        if inner:
            return f".<name>{inner[0]}", inner[1]
        return None
    if origin in (list, tuple) and args:
        inner = _nested(args[0])
        if inner:
            return f"[]{inner[0]}", inner[1]
    return None


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def recipe_reference() -> str:
    from aart.recipe import Recipe

    rows: list[str] = []

    def walk(model: type, prefix: str) -> None:
        comments = _field_comments(model)
        for name, info in model.model_fields.items():
            key = f"{prefix}{info.alias or name}"
            description = info.description or comments.get(name, "")
            nested = _nested(info.annotation)
            if nested is not None:  # the section's own docstring says more
                doc = inspect.cleandoc(nested[1].__doc__ or "")
                if doc and not doc.startswith(nested[1].__name__ + "("):  # pydantic's default
                    description = f"{description}. {doc}" if description else doc
            type_name = _type_name(info.annotation)
            bounds = _bounds(info)
            if bounds:
                type_name += f" ({bounds})"
            rows.append(
                f"| `{key}` | {_cell(type_name)} | {_default(info)} | {_cell(description)} |"
            )
            if nested is not None:
                walk(nested[1], key + nested[0])

    walk(Recipe, "")
    head = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    return "\n".join(head + rows) + "\n"


# ------------------------------------------------------------------------------ run.db schema
def rundb_schema() -> str:
    from aart.store.db import RunDB

    db = RunDB(":memory:", lock=False)  # runs every migration, as a new run does
    try:
        conn: sqlite3.Connection = db.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        objects = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY tbl_name, type DESC, name"
        ).fetchall()
        out = [f"Schema version (`PRAGMA user_version`): **{version}**.", ""]
        tables = [o for o in objects if o[0] == "table"]
        for _, name, _, _ in tables:
            out.append(f"### `{name}`")
            out.append("")
            out.append("| column | type | not null | default | primary key |")
            out.append("| --- | --- | --- | --- | --- |")
            for _, col, ctype, notnull, default, pk in conn.execute(f"PRAGMA table_info({name})"):
                out.append(
                    f"| `{col}` | {ctype or ''} | {'yes' if notnull else ''} | "
                    f"{'`' + str(default) + '`' if default is not None else ''} | "
                    f"{'yes' if pk else ''} |"
                )
            indexes = [o for o in objects if o[0] == "index" and o[2] == name]
            if indexes:
                out.append("")
                out.append("Indexes: " + ", ".join(f"`{o[1]}`" for o in indexes) + ".")
            out.append("")
        out += _record_kinds()
        out.append("### The schema as SQL")
        out.append("")
        out.append("```sql")
        for _, _, _, sql in objects:
            out.append(_normalize_sql(sql) + ";")
        out.append("```")
        return "\n".join(out) + "\n"
    finally:
        db.close()


def _record_kinds() -> list[str]:
    """The values of ``records.kind``, from the enum that names them (when the code has one)."""
    try:
        from aart.types import RecordKind
    except ImportError:
        return []
    comments = _field_comments(RecordKind)
    out = ["### `records.kind`", "", "| kind | what the record is |", "| --- | --- |"]
    out += [f"| `{k.value}` | {_cell(comments.get(k.name, ''))} |" for k in RecordKind]
    return [*out, ""]


def _normalize_sql(sql: str) -> str:
    """SQLite keeps each statement as written (ALTERs appended to one line): one column a line."""
    sql = " ".join(sql.split())
    m = re.match(r"(CREATE TABLE \S+) \((.*)\)$", sql)
    if not m:
        return sql
    cols, depth, cur = [], 0, ""
    for ch in m.group(2):
        if ch == "," and depth == 0:
            cols.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    cols.append(cur.strip())
    return m.group(1) + " (\n" + ",\n".join("    " + c for c in cols) + "\n)"


# ---------------------------------------------------------------------------------- layers
def layers() -> str:
    """The layers as tests/test_layers.py checks them (its LAYERS list, read without running it)."""
    source = (ROOT / "tests" / "test_layers.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "LAYERS" and node.value is not None:
            table = ast.literal_eval(node.value)
            break
    else:
        raise SystemExit("tests/test_layers.py: no LAYERS list to document")
    out = [
        "| layer (top to bottom) | modules | siblings may import each other |",
        "| --- | --- | --- |",
    ]
    for i, (modules, shared) in enumerate(table, 1):
        names = " \\| ".join(f"`{m}`" for m in modules)
        out.append(f"| {i} | {names} | {'yes' if shared else ('no' if len(modules) > 1 else '')} |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------- the pages
GENERATORS: dict[str, tuple[str, Callable[[], str]]] = {
    "cli": ("cli.md", cli_reference),
    "recipe": ("recipe-reference.md", recipe_reference),
    "rundb": ("run-db.md", rundb_schema),
    "layers": ("architecture.md", layers),
}

_BLOCK = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>\w+)[^>]*-->\n)(?P<body>.*?)"
    r"(<!-- END GENERATED: (?P=name) -->)",
    re.S,
)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def render(page: str, text: str) -> str:
    """``text`` with the page's generated block rewritten."""
    name = next(n for n, (p, _) in GENERATORS.items() if p == page)
    body = GENERATORS[name][1]()

    def fill(m: re.Match[str]) -> str:
        return m.group(1) + body + m.group(4)

    new, count = _BLOCK.subn(fill, text)
    if count != 1:
        raise SystemExit(f"docs/{page}: expected one block <!-- BEGIN GENERATED: {name} -->")
    return new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a page is stale")
    args = parser.parse_args(argv)
    stale = []
    for page, _ in GENERATORS.values():
        path = DOCS / page
        old = path.read_text(encoding="utf-8")
        new = render(page, old)
        if new != old:
            if args.check:
                stale.append(f"docs/{page}")
            else:
                path.write_text(new, encoding="utf-8")
                print(f"wrote docs/{page}")
    if stale:
        print(f"stale: {', '.join(stale)}; run `{REGENERATE}` to regenerate", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
