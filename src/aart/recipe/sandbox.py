"""A Jinja sandbox whose templates cannot exhaust time or memory.

Templates come from shared documents (recipes, HTTP target files). Jinja's immutable sandbox
keeps them away from Python internals but not from building a huge string (`'x'|center(10**9)`,
a wide format, join or indent) or from looping for hours (nested loops over `range(100000)`).
So every render gets a budget:

- operations: each loop iteration (weighted by the size of its body), call, filter, test,
  attribute or item lookup and intercepted operator costs from it;
- building: each value a filter, call or operator makes is charged by its size, and anything
  that would make one value larger than ``max_build`` is refused *before* it is allocated
  (widths, repeats, joins, replacements and formats are estimated from their arguments);
- output: the rendered text (and every captured block or macro) is at most ``max_build``.

A refusal raises jinja's SecurityError, which callers turn into a located usage error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import update_wrapper
from typing import Any, cast

from jinja2 import nodes
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.filters import make_attrgetter
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter
from jinja2.visitor import NodeTransformer

#: the most characters (or items) one value may have, and the rendered text
MAX_BUILD = 200_000
#: operations per render (a loop iteration counts its body's nodes)
MAX_OPS = 1_000_000
#: the most characters all values built during one render may add up to
MAX_BUILT = 20 * MAX_BUILD
#: the most bits an integer may have
MAX_INT_BITS = 65_536


@dataclass
class _Budget:
    ops: int
    built: int


#: the filters the loop and `~` rewriting inserts; a template may not name them itself
_INTERNAL_FILTERS = frozenset({"_aart_loop", "_aart_concat", "_aart_literal"})

_BUDGET: ContextVar[_Budget | None] = ContextVar("aart_template_budget", default=None)


def size_of(value: Any, limit: int = 10 * MAX_BUILD) -> int:
    """About how many characters ``value`` takes as text, never more than just past
    ``limit`` (a long container is not walked to its end), without making that text."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) + 2
        elif isinstance(v, (list, tuple, set, frozenset)):
            total += 2 + len(v)
            stack.extend(v)
        elif isinstance(v, dict):
            total += 2 + 2 * len(v)
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, int) and not isinstance(v, bool):
            total += v.bit_length() // 3 + 1
        else:
            total += 8
    return total


def _len(value: Any, limit: int = 10 * MAX_BUILD) -> int:
    """The length of ``value``'s text: exact for a string, estimated otherwise."""
    return len(value) if isinstance(value, str) else size_of(value, limit)


def _refuse(what: str) -> SecurityError:
    return SecurityError(what)


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with bounds on operations, on each value built and on the
    output; see the module docstring. Intercepted operators are never constant-folded at
    compile time, so `{{ 'x' * 10**10 }}` is refused at render time too."""

    intercepted_binops = frozenset({"*", "+", "**", "%", "//", "-", "/"})

    def __init__(self, *, max_build: int = MAX_BUILD, max_ops: int = MAX_OPS, **kw: Any) -> None:
        self.max_build = max_build
        self.max_ops = max_ops
        self.max_built = 20 * max_build
        super().__init__(finalize=self._finalize, **kw)
        # lipsum(10**6) writes a million paragraphs; nothing a prompt needs
        self.globals.pop("lipsum", None)
        self.filters = {name: self._bounded_filter(name, f) for name, f in self.filters.items()}
        self.filters["_aart_loop"] = self._loop_filter
        self.filters["_aart_concat"] = self._concat_filter
        self.filters["_aart_literal"] = self.charge
        self.tests = {name: self._ticking(cast(Any, f)) for name, f in self.tests.items()}

    # -- the budget --------------------------------------------------------------------

    def budget(self) -> _Budget:
        b = _BUDGET.get()
        if b is None:  # outside render(): one operation's own allowance
            b = _Budget(self.max_ops, self.max_built)
        return b

    def start(self) -> Any:
        """Start a render's budget; returns the token for ``finish``."""
        return _BUDGET.set(_Budget(self.max_ops, self.max_built))

    def finish(self, token: Any) -> None:
        _BUDGET.reset(token)

    def tick(self, n: int = 1) -> None:
        b = self.budget()
        b.ops -= max(1, n)
        if b.ops < 0:
            raise _refuse(f"the template runs more than {self.max_ops:,} operations")

    def _check(self, n: int, what: str = "value", limit: int | None = None) -> None:
        limit = limit or self.max_build
        if n > limit:
            raise _refuse(f"the template builds more than {limit:,} characters in one {what}")

    def charge(self, value: Any) -> Any:
        """Count what an operation made against the render's allowance."""
        if isinstance(value, (str, list, tuple, dict)):
            self._check(len(value))
        n = size_of(value, self.max_built)
        b = self.budget()
        b.built -= n
        if b.built < 0:
            raise _refuse(f"the template builds more than {self.max_built:,} characters in all")
        return value

    # -- output ------------------------------------------------------------------------

    def _finalize(self, value: Any) -> Any:
        if not isinstance(value, str):
            self._check(size_of(value, self.max_build), "text")
        return value

    def concat(self, pieces: Iterable[str]) -> str:  # type: ignore[override]
        """The rendered text (and each captured block and macro's output), bounded."""
        out: list[str] = []
        total = 0
        for piece in pieces:
            total += len(piece)
            if total > self.max_build:
                raise _refuse(f"the template renders more than {self.max_build:,} characters")
            out.append(piece)
        return "".join(out)

    # -- loops, concatenation: rewritten into filters at parse time -------------------------

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for f in tree.find_all(nodes.Filter):
            if f.name in _INTERNAL_FILTERS:  # a template must not feed the budget itself
                raise TemplateSyntaxError(f"No filter named {f.name!r}.", f.lineno, name, filename)
        tree = cast(nodes.Template, _Literals(self).visit(tree))
        for loop in list(tree.find_all(nodes.For)):
            weight = 1 + sum(1 + sum(1 for _ in n.find_all(nodes.Node)) for n in loop.body)
            loop.iter = (
                nodes.Filter(loop.iter, "_aart_loop", [nodes.Const(weight)], [], None, None)
                .set_lineno(loop.iter.lineno)
                .set_environment(self)
            )
        for concat in list(tree.find_all(nodes.Concat)):
            # `a ~ b` compiles to a join without any hook: make it a bounded filter call
            joined = nodes.Filter(
                nodes.List(list(concat.nodes)), "_aart_concat", [], [], None, None
            )
            concat.nodes = [
                cast(nodes.Expr, joined.set_lineno(concat.lineno).set_environment(self))
            ]
        return tree

    def add_filter(self, name: str, f: Callable[..., Any]) -> None:
        """Register a filter under the same bounds as the built-in ones."""
        self.filters[name] = self._bounded_filter(name, f)

    def _counted(self, iterable: Any, weight: int) -> Iterator[Any]:
        for item in iterable:
            self.tick(weight)
            yield item

    def _loop_filter(self, iterable: Any, weight: int = 1) -> Iterator[Any]:
        return self._counted(iterable, max(1, int(weight)))

    def _concat_filter(self, parts: list[Any]) -> str:
        self.tick()
        self._check(sum(_len(p, self.max_build) for p in parts), "string")
        return self.charge("".join(str(p) for p in parts))

    # -- filters, tests, calls, lookups, operators ------------------------------------

    def _ticking(self, f: Callable[..., Any]) -> Callable[..., Any]:
        def test(*args: Any, **kwargs: Any) -> Any:
            self.tick()
            return f(*args, **kwargs)

        return update_wrapper(test, f)

    def _bounded_filter(self, name: str, f: Callable[..., Any]) -> Callable[..., Any]:
        precheck = _FILTER_CHECKS.get(name)

        skip = 1 if getattr(f, "jinja_pass_arg", None) is not None else 0

        def bounded(*args: Any, **kwargs: Any) -> Any:
            self.tick()
            if precheck is not None:
                if len(args) > skip and not isinstance(args[skip], (str, list, tuple, dict)):
                    # a generator is consumed by the check: hand the filter the same items
                    args = (*args[:skip], list(args[skip]), *args[skip + 1 :])
                # the filter's own arguments, without the context jinja may pass first
                precheck(self, args[skip:], kwargs, args[0] if skip else None)
            return self.charge(f(*args, **kwargs))

        return update_wrapper(bounded, f)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        __self.tick()
        if isinstance(__obj, LoopContext) and args:
            # a recursive loop's inner levels iterate here, not through the loop filter
            args = (__self._counted(args[0], 1), *args[1:])
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str):
            _check_str_method(__self, owner, getattr(__obj, "__name__", ""), args, kwargs)
        out = super().call(__context, __obj, *args, **kwargs)
        return __self.charge(out) if isinstance(out, (str, list, tuple, dict)) else out

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.tick()
        return super().getitem(obj, argument)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        self.tick()
        if operator == "*":
            for seq, k in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(k, int):
                    self._check(len(seq) * k)
                    # a list of k references to one long string is long once written out
                    self._check(size_of(seq, self.max_built) * k, "list", self.max_built)
            if isinstance(left, int) and isinstance(right, int):
                if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                    raise _refuse("the template multiplies numbers that are too large")
        elif operator == "+":
            if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                self._check(len(left) + len(right))
        elif operator == "**" and isinstance(left, int) and isinstance(right, int):
            if right > 0 and abs(left) > 1 and abs(left).bit_length() * right > 4096:
                raise _refuse("the template raises a number to too high a power")
        elif operator == "%" and isinstance(left, str):
            _check_percent(self, left, right)
        out = super().call_binop(context, operator, left, right)
        return self.charge(out) if isinstance(out, (str, list, tuple)) else out

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` and ``format_map`` through a formatter that bounds each field's
        width and the whole result (Jinja's own wraps them only to guard attributes)."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        f_self: str = value.__self__
        is_map = value.__name__ == "format_map"
        env = self

        def bounded(*args: Any, **kwargs: Any) -> str:
            formatter = _BoundedFormatter(env)
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                return str(formatter.vformat(f_self, (), args[0]))
            return str(formatter.vformat(f_self, args, kwargs))

        return update_wrapper(bounded, value)


class _Literals(NodeTransformer):
    """Every list, tuple and dict a template writes out goes through ``charge``: `{% set x =
    [x, x] %}` forty times is a list of 2**40 items once compared, sorted or printed."""

    def __init__(self, env: BoundedSandbox) -> None:
        self.env = env

    def _charged(self, node: nodes.Node) -> nodes.Node:
        self.generic_visit(node)
        if isinstance(node, nodes.Tuple) and node.ctx != "load":
            return node  # an assignment target (`for a, b in ...`), not a value
        return (
            nodes.Filter(cast(nodes.Expr, node), "_aart_literal", [], [], None, None)
            .set_lineno(node.lineno)
            .set_environment(self.env)
        )

    visit_List = visit_Tuple = visit_Dict = _charged  # noqa: N815 - the visitor's names


class _BoundedFormatter(SandboxedFormatter):
    def __init__(self, env: BoundedSandbox) -> None:
        super().__init__(env)
        self._bounded = env
        self._total = 0

    def format_field(self, value: Any, format_spec: str) -> Any:
        env = self._bounded
        env.tick()
        widest = max((int(n) for n in re.findall(r"\d+", format_spec)), default=0)
        env._check(widest, "field")
        env._check(_len(value, env.max_build), "field")
        out = super().format_field(value, format_spec)
        self._total += len(out)
        env._check(self._total, "string")
        return out


_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")


def _check_percent(env: BoundedSandbox, fmt: str, args: Any) -> None:
    """Refuse `fmt % args` (and the format filter) if its result could be too large."""
    specs = _PERCENT_SPEC.findall(fmt)
    if any("*" in (w, p) for w, p in specs):
        raise _refuse("the template's % format takes its width from an argument")
    widths = sum(max(int(w or 0), int(p or 0)) for w, p in specs)
    items = list(args.values()) if isinstance(args, dict) else args
    if not isinstance(items, (list, tuple)):
        items = [items]
    widest = max((_len(a, env.max_build) for a in items), default=0)
    env._check(len(fmt) + widths + len(specs) * widest, "string")


def _check_str_method(
    env: BoundedSandbox, s: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Refuse a str method whose result would be too large, before it runs."""
    if name in ("center", "ljust", "rjust", "zfill") and args:
        if isinstance(args[0], int):
            env._check(args[0], "string")
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tab, int):
            env._check(len(s) + s.count("\t") * tab, "string")
    elif name == "replace" and len(args) >= 2:
        _check_replace(env, s, args[0], args[1])
    elif name == "join" and args:
        _check_join(env, args[0], s)
    elif name == "translate" and args and isinstance(args[0], dict):
        widest = max((_len(v, env.max_build) for v in args[0].values()), default=1)
        env._check(len(s) * widest, "string")


def _check_replace(env: BoundedSandbox, s: Any, old: Any, new: Any) -> None:
    if isinstance(s, str) and isinstance(old, str) and isinstance(new, str):
        hits = len(s) + 1 if old == "" else s.count(old)
        env._check(len(s) + hits * len(new), "string")


def _check_join(env: BoundedSandbox, items: Any, sep: Any) -> None:
    if isinstance(items, (list, tuple, str, dict, range)):
        n = len(items)
        total = sum(_len(x, env.max_build) for x in items) if n <= env.max_build else n
        env._check(total + len(str(sep)) * max(n - 1, 0), "string")


def _number(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


# Checks before a filter runs, for the filters whose result may be much larger than their
# input. Each gets (env, args without jinja's context, kwargs, context or None).
def _pre_center(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    width = a[1] if len(a) > 1 else kw.get("width", 80)
    env._check(int(_number(width)), "string")


def _pre_indent(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    s = str(a[0]) if a and isinstance(a[0], str) else ""
    width = a[1] if len(a) > 1 else kw.get("width", 4)
    w = len(width) if isinstance(width, str) else int(_number(width))
    env._check(w, "string")
    env._check(len(s) + (s.count("\n") + 1) * w, "string")


def _pre_format(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    if a and isinstance(a[0], str):
        _check_percent(env, a[0], kw or tuple(a[1:]))


def _pre_join(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], ctx: Any) -> None:
    if not a:
        return
    items, sep = a[0], a[1] if len(a) > 1 else kw.get("d", "")
    attribute = a[2] if len(a) > 2 else kw.get("attribute")
    if attribute is not None and ctx is not None:
        get = make_attrgetter(ctx.environment, attribute)
        items = [get(x) for x in items]
    _check_join(env, items, sep)


def _pre_replace(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    if len(a) >= 3:
        _check_replace(env, str(a[0]) if isinstance(a[0], str) else "", a[1], a[2])


def _pre_wordwrap(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    s = a[0] if a and isinstance(a[0], str) else ""
    width = max(int(_number(a[1] if len(a) > 1 else kw.get("width", 79))), 1)
    wrap = a[3] if len(a) > 3 else kw.get("wrapstring") or "\n"
    env._check(len(s) + (len(s) // width + 1) * len(str(wrap)), "string")


def _pre_count(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    """batch and slice: the count of groups, or of items per group, builds that many."""
    n = a[1] if len(a) > 1 else kw.get("linecount", kw.get("slices", 0))
    env._check(int(_number(n)), "list")


def _pre_stringify(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    """string, tojson, pprint, ...: the text of a value is about its size (escapes apart)."""
    if a:
        env._check(size_of(a[0], env.max_build), "string")


def _pre_sum(env: BoundedSandbox, a: tuple[Any, ...], kw: dict[str, Any], _c: Any) -> None:
    start = a[2] if len(a) > 2 else kw.get("start", 0)
    if not isinstance(start, (int, float)):
        raise _refuse("the template's sum adds numbers only")  # adding lists is quadratic


_FILTER_CHECKS: dict[str, Callable[[BoundedSandbox, tuple[Any, ...], dict[str, Any], Any], None]]
_FILTER_CHECKS = {
    "center": _pre_center,
    "indent": _pre_indent,
    "format": _pre_format,
    "join": _pre_join,
    "replace": _pre_replace,
    "wordwrap": _pre_wordwrap,
    "batch": _pre_count,
    "slice": _pre_count,
    "string": _pre_stringify,
    "tojson": _pre_stringify,
    "json": _pre_stringify,
    "pprint": _pre_stringify,
    "urlencode": _pre_stringify,
    "xmlattr": _pre_stringify,
    "e": _pre_stringify,
    "escape": _pre_stringify,
    "forceescape": _pre_stringify,
    "list": _pre_stringify,
    "sum": _pre_sum,
}

__all__ = ["MAX_BUILD", "MAX_OPS", "BoundedSandbox", "SecurityError"]
