"""YAML from shared documents (recipes, target files), loaded with bounds.

A few hundred bytes of nested aliases (``&a [*a, *a, ...]``) expand to billions of nodes once
something walks the document, and a deeply nested one exhausts the stack. So nesting depth,
alias cycles and the size of the document with every alias expanded are checked while it is
composed, before anything walks it, and each refusal names the line.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import RecipeError

#: how deep mappings and lists may nest (a recipe needs about 6)
MAX_DEPTH = 64
#: how many nodes a document may have once its aliases are expanded
MAX_EXPANDED = 200_000


class _Refused(Exception):
    def __init__(self, message: str, mark: Any, fix: str) -> None:
        self.message, self.mark, self.fix = message, mark, fix


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, refusing too deep a nesting while composing (the composer recurses,
    so without the check a deep document ends in a RecursionError)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0
        self.first_alias: Any = None

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            if self.first_alias is None:
                self.first_alias = self.peek_event().start_mark
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(
                    f"nested more than {MAX_DEPTH} levels deep",
                    self.peek_event().start_mark,
                    "flatten the nesting; no setting needs this depth",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _measure(root: yaml.Node, first_alias: Any) -> None:
    """Refuse an alias cycle, and a document whose aliases expand past MAX_EXPANDED nodes or
    MAX_DEPTH levels. Linear in the composed graph: each shared node is measured once."""
    sizes: dict[int, tuple[int, int]] = {}  # id -> (nodes, height) once expanded
    busy: set[int] = set()
    too_big = _Refused(
        f"its aliases expand it to more than {MAX_EXPANDED:,} values",
        first_alias,
        "write the values out instead of repeating aliases (*name) of aliases",
    )

    def walk(node: yaml.Node, level: int) -> tuple[int, int]:
        key = id(node)
        if key in busy:
            raise _Refused(
                "an alias refers to the mapping or list that contains it",
                first_alias or node.start_mark,
                "remove the alias (*name) that points back at its own anchor (&name)",
            )
        if key not in sizes:
            if level > MAX_DEPTH:
                raise _Refused(
                    f"its aliases nest it more than {MAX_DEPTH} levels deep",
                    first_alias or node.start_mark,
                    "write the values out instead of nesting aliases",
                )
            busy.add(key)
            if isinstance(node, yaml.MappingNode):
                children = [c for pair in node.value for c in pair]
            elif isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            else:
                children = []
            count, height = 1, 0
            for child in children:
                n, h = walk(child, level + 1)
                count, height = count + n, max(height, h)
                if count > MAX_EXPANDED:
                    raise too_big
            busy.discard(key)
            sizes[key] = (count, height + 1)
        count, height = sizes[key]
        if level + height - 1 > MAX_DEPTH:
            raise _Refused(
                f"its aliases nest it more than {MAX_DEPTH} levels deep",
                first_alias or node.start_mark,
                "write the values out instead of nesting aliases",
            )
        return sizes[key]

    walk(root, 1)


def _no_key_twice(root: yaml.Node) -> None:
    """Refuse a mapping that gives a key twice: YAML keeps the last one silently, so a section
    appended to a recipe that already has it replaced the first whole, and the error named
    a key of the lost section as missing."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, Any] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in first:
                        raise _Refused(
                            f"{key.value!r} is given twice (first on line "
                            f"{first[key.value].line + 1}); YAML would keep only the last",
                            key.start_mark,
                            "merge the two into one (a section's keys go under its one "
                            "heading), or remove one",
                        )
                    first[key.value] = key.start_mark
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def load_bounded(text: str, file: str) -> tuple[yaml.Node | None, Any]:
    """(composed node, data) of a YAML document; RecipeError (located) for invalid YAML or a
    document past the bounds."""
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and loader.first_alias is not None:
            _measure(node, loader.first_alias)
        if node is not None:
            _no_key_twice(node)
        data = loader.construct_document(node) if node is not None else None
    except _Refused as e:
        raise RecipeError(
            e.message,
            file=file,
            line=e.mark.line + 1 if e.mark else None,
            column=e.mark.column + 1 if e.mark else None,
            fix=e.fix,
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise RecipeError(
            f"not valid YAML: {getattr(e, 'problem', None) or e}",
            file=file,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            fix="check indentation and quoting on this line",
        ) from None
    finally:
        loader.dispose()
    return node, data
