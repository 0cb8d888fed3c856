"""Literal values out of Python source, by reading its syntax tree: never imported, never
run. AgentDojo writes its tasks as classes whose goals are f-strings over class constants
(``GOAL = f"Send ... to {_ATTACKER_IBAN}"``) and whose expected calls are
``FunctionCall(function=..., args={...})`` literals; this module evaluates exactly that
much: constants, names bound to constants, f-strings, string concatenation and
containers. Anything else (a call, a comprehension, a method's result) is not literal."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any


class NotLiteral(Exception):
    """The expression needs running code to have a value."""


#: a bound on the size of what an f-string or a concatenation may build
_MAX_TEXT = 200_000


def value(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """The value of ``node`` given the names in ``env`` (``self.X`` and ``Cls.X`` read
    ``env["X"]``)."""
    try:
        return _value(node, env)
    except RecursionError:  # an expression nested beyond reason is not a task's constant
        raise NotLiteral("too deep") from None


def _value(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise NotLiteral(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.attr in env:
            return env[node.attr]
        raise NotLiteral(node.attr)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                v = _value(part.value, env)
                spec = ""
                if part.format_spec is not None:
                    spec = str(_value(part.format_spec, env))
                if part.conversion == ord("r"):
                    v = repr(v)
                try:
                    parts.append(format(v, spec))
                except (ValueError, TypeError):
                    raise NotLiteral("format") from None
            else:
                raise NotLiteral(type(part).__name__)
        return _bounded("".join(parts))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, env), _value(node.right, env)
        if isinstance(left, str) and isinstance(right, str):
            return _bounded(left + right)
        if isinstance(left, int | float) and isinstance(right, int | float):
            return left + right
        raise NotLiteral("+")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _value(node.operand, env)
        if isinstance(v, int | float):
            return -v
        raise NotLiteral("-")
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
        and len(node.args) == 1
        and not node.keywords
    ):
        # ", ".join(_EMAIL_ADDRESSES): the one method call a literal text is built with
        items = _value(node.args[0], env)
        if isinstance(items, list | tuple) and all(isinstance(i, str) for i in items):
            return _bounded(node.func.value.value.join(items))
        raise NotLiteral("join")
    if isinstance(node, ast.List | ast.Tuple):
        items = [_value(e, env) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise NotLiteral("**")
            out[_value(k, env)] = _value(v, env)
        return out
    raise NotLiteral(type(node).__name__)


def _bounded(text: str) -> str:
    if len(text) > _MAX_TEXT:
        raise NotLiteral("too long")
    return text


def constants(body: list[ast.stmt], env: Mapping[str, Any]) -> dict[str, Any]:
    """The names a module's or class's body binds to literal values, in order (later
    constants may use earlier ones); the rest are left out."""
    out: dict[str, Any] = {}
    for stmt in body:
        targets: list[ast.expr] = []
        node: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, node = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, node = [stmt.target], stmt.value
        if node is None:
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                try:
                    out[t.id] = value(node, {**env, **out})
                except NotLiteral:
                    out.pop(t.id, None)
    return out
