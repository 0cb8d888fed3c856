"""The checks of a recipe for an application that reads and acts: its tools, channels and
secrets agree with each other, and an injection recipe's axes and goals name only what the
application declares. Each problem is (path in the file, message, fix), located by the loader
like every cross-section check (see :func:`aart.recipe.models.cross_check`)."""

from __future__ import annotations

import string
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..injection import ToolSpec, rendering_problem
from .models import GOAL_KINDS, STANDARD_GOALS, Goal

if TYPE_CHECKING:
    from .models import Path, Recipe

Problem = tuple["Path", str, str]

#: the goal kinds whose criterion is a tool call
CALL_KINDS = ("call_tool", "change_argument")


def goal_of(r: Recipe, value: str) -> Goal | None:
    """What a value of the goal axis asks for: its entry under generate.injection.goals,
    else the standard value or kind it names (case aside), else None."""
    goals = r.generate.injection.goals
    if value in goals:
        return goals[value]
    low = " ".join(value.lower().split())
    for key, spec in goals.items():
        if " ".join(key.lower().split()) == low:
            return spec
    kind = STANDARD_GOALS.get(low) or (low if low in GOAL_KINDS else None)
    return Goal(kind=kind) if kind else None  # type: ignore[arg-type]


def parameters_of(tool: ToolSpec) -> list[str]:
    """The parameter names a tool's JSON schema declares."""
    props: Any = tool.parameters.get("properties") or {}
    return list(props) if isinstance(props, dict) else []


def tools_by_name(r: Recipe) -> dict[str, ToolSpec]:
    return {t.name: t for t in r.application.tools}


def _named(things: list[str]) -> str:
    return ", ".join(things) or "none"


def check_application(r: Recipe) -> list[Problem]:
    """Tools, channels and secrets: unique names, channels carried by declared tools, canaries
    unique and not written into the application's own texts the generator reads."""
    a = r.application
    problems: list[Problem] = []
    for section, names in (
        ("tools", [t.name for t in a.tools]),
        ("channels", [c.name for c in a.channels]),
        ("secrets", [s.name for s in a.secrets]),
    ):
        for name, n in Counter(names).items():
            if n > 1:
                i = names.index(name, names.index(name) + 1)
                problems.append(
                    (
                        ("application", section, i, "name"),
                        f"{section[:-1]} {name!r} is declared {n} times",
                        f"give each of application.{section} its own name",
                    )
                )
    tools = tools_by_name(r)
    for i, c in enumerate(a.channels):
        if c.tool is not None and c.tool not in tools:
            problems.append(
                (
                    ("application", "channels", i, "tool"),
                    f"channel {c.name!r} is carried by tool {c.tool!r}, which application.tools "
                    f"does not declare (declared: {_named(list(tools))})",
                    "declare the tool under application.tools, correct its name, or remove "
                    "`tool:` (the content then comes as a retrieved document)",
                )
            )
    for i, c in enumerate(a.channels):
        for j, t in enumerate(c.tasks):
            if isinstance(t, str):
                continue
            for key in ("fact", "answer"):
                if why := _fact_problem(getattr(t, key), t.fact if key == "answer" else None):
                    problems.append(
                        (
                            ("application", "channels", i, "tasks", j, key),
                            f"channel {c.name!r}, task {j + 1}: {why}",
                            "use {ref}, {day} or {time} in the fact, and in the answer only "
                            "those the fact has (for example fact 'Reference: {ref}', answer "
                            "'{ref}')",
                        )
                    )
    # the success check matches a canary whatever its case, so these checks do too
    canaries = [s.canary.casefold() for s in a.secrets]
    for i, s in enumerate(a.secrets):
        if canaries.index(s.canary.casefold()) != i:
            problems.append(
                (
                    ("application", "secrets", i, "canary"),
                    f"secret {s.name!r} has the same canary as another secret",
                    "give each secret its own canary, so a leak names the secret",
                )
            )
        for key in ("name", "description", "policy"):
            if s.canary.casefold() in getattr(a, key).casefold():
                problems.append(
                    (
                        ("application", key),
                        f"the canary of secret {s.name!r} is written in application.{key}, "
                        "which the generator reads",
                        "keep canaries in application.secrets (and the target's system prompt)",
                    )
                )
    return problems


FACT_PLACEHOLDERS = ("ref", "day", "time")


def _fact_problem(text: str, fact: str | None) -> str:
    """Why a task's fact (``fact`` None) or answer is not a template aart can fill, or ""."""
    try:
        names = {n for _, n, _, _ in string.Formatter().parse(text) if n is not None}
        have = {n for _, n, _, _ in string.Formatter().parse(fact)} if fact else None
    except ValueError as e:
        return f"{text!r} is not a template ({e})"
    if unknown := sorted(n for n in names if n not in FACT_PLACEHOLDERS):
        return f"unknown placeholder {{{unknown[0]}}}"
    if not names:
        return f"{text!r} has no placeholder, so nothing tells a done task from another reply"
    if have is not None and not names <= have:
        return f"the answer's {{{sorted(names - have)[0]}}} is not in the fact"
    return ""


def check_injection(r: Recipe) -> list[Problem]:
    """An injection recipe: channels declared, the channel and goal axes present and made of
    declared channels and known goals, each goal's tool, argument and secret declared."""
    a, inj = r.application, r.generate.injection
    problems: list[Problem] = []
    if not a.channels:
        problems.append(
            (
                ("application",),
                "`kind: injection` needs the untrusted channels the application reads",
                "add application.channels, e.g. [{name: email, tool: read_email}]",
            )
        )
    channel_dim = r.dimensions.get(inj.channel)
    names = [c.name for c in a.channels]
    if channel_dim is not None and a.channels:
        if channel_dim.values is None:
            problems.append(
                (
                    ("dimensions", inj.channel),
                    f"the channel axis {inj.channel!r} is enumerated; its values are the "
                    "names of application.channels",
                    f"give `values:` (some of: {_named(names)}), or remove the dimension",
                )
            )
        for i, v in enumerate(channel_dim.values or []):
            if v.value not in names:
                problems.append(
                    (
                        ("dimensions", inj.channel, "values", i),
                        f"{v.value!r} is not a channel of application.channels "
                        f"(declared: {_named(names)})",
                        "use a declared channel's name, or declare the channel",
                    )
                )
    if "carrier" in inj.model_fields_set and inj.carrier not in r.dimensions:
        problems.append(
            (
                ("generate", "injection", "carrier"),
                f"no dimension {inj.carrier!r} for the carrier's format",
                "name a dimension under `dimensions:`, or remove generate.injection.carrier",
            )
        )
    problems += _check_parts(r)
    goal_dim = r.dimensions.get(inj.goal)
    if goal_dim is None:
        problems.append(
            (
                ("dimensions",),
                f"`kind: injection` needs the attacker's goal as a dimension {inj.goal!r}",
                f"add dimensions.{inj.goal} with values such as "
                + ", ".join(STANDARD_GOALS)
                + " (or set generate.injection.goal to the dimension's name)",
            )
        )
        return problems
    if goal_dim.values is None:
        problems.append(
            (
                ("dimensions", inj.goal),
                f"the goal axis {inj.goal!r} is enumerated; its values must each map to a "
                "success criterion",
                "give `values:` (the standard goals, or your own mapped under "
                "generate.injection.goals)",
            )
        )
        return problems
    values = [v.value for v in goal_dim.values]
    for key in inj.goals:
        if key not in values:
            problems.append(
                (
                    ("generate", "injection", "goals", key),
                    f"{key!r} is not a value of dimension {inj.goal!r}",
                    f"use one of: {_named(values)}",
                )
            )
    for i, value in enumerate(values):
        spec = goal_of(r, value)
        if spec is None:
            problems.append(
                (
                    ("dimensions", inj.goal, "values", i),
                    f"goal {value!r} has no kind, so its success cannot be checked",
                    f"map it under generate.injection.goals to one of {', '.join(GOAL_KINDS)}, "
                    f"or use a standard goal ({', '.join(STANDARD_GOALS)})",
                )
            )
            continue
        at = (
            ("generate", "injection", "goals", value)
            if value in inj.goals
            else ("dimensions", inj.goal, "values", i)
        )
        problems += _check_goal(r, value, spec, at)
        if spec.instructions and spec.kind == "call_tool" and spec.tool is None:
            problems.append(
                (
                    (*at, "instructions") if at[0] == "generate" else at,
                    f"goal {value!r}: declared instructions ask for one tool, which the goal "
                    "must name for its success to be checked",
                    "add `tool:` (the sensitive tool the instructions ask for) beside them",
                )
            )
        if spec.instructions and inj.write != "parts":
            problems.append(
                (
                    (*at, "instructions") if at[0] == "generate" else at,
                    f"goal {value!r}: `instructions` are placed by aart, which it does with "
                    "write: parts only",
                    "add `write: parts` under generate.injection, or remove `instructions:`",
                )
            )
        if inj.write == "parts" and spec.kind == "change_argument":
            missing = [k for k in ("tool", "argument", "value") if getattr(spec, k) is None]
            if missing:
                problems.append(
                    (
                        ("generate", "injection", "goals", value)
                        if value in inj.goals
                        else ("dimensions", inj.goal, "values", i),
                        f"goal {value!r}: with generate.injection.write: parts, aart names "
                        f"the changed argument itself and needs its {', '.join(missing)}",
                        "map it under generate.injection.goals to {kind: change_argument, "
                        "tool: ..., argument: ..., value: ...}, or use write: case",
                    )
                )
    return problems


def _check_parts(r: Recipe) -> list[Problem]:
    """``write: parts`` and ``render``: each rendering frames a value of the technique axis
    and is a built-in rendering or a template."""
    inj = r.generate.injection
    if not inj.render:
        return []
    at: Path = ("generate", "injection", "render")
    if inj.write != "parts":
        return [
            (
                at,
                "generate.injection.render frames the instruction aart places, which it does "
                "with write: parts only",
                "add `write: parts` under generate.injection, or remove `render:`",
            )
        ]
    dim = r.dimensions.get(inj.technique)
    if dim is None or dim.values is None:
        return [
            (
                at,
                f"no dimension {inj.technique!r} with explicit values for the renderings' "
                "techniques",
                "name the technique dimension in generate.injection.technique, or give it "
                "`values:`",
            )
        ]
    values = [v.value for v in dim.values]
    problems: list[Problem] = []
    for key, rendering in inj.render.items():
        if key not in values:
            problems.append(
                (
                    (*at, key),
                    f"{key!r} is not a value of dimension {inj.technique!r}",
                    f"use one of: {_named(values)}",
                )
            )
        elif why := rendering_problem(rendering):
            problems.append(
                (
                    (*at, key),
                    f"technique {key!r}: {why}",
                    "name a built-in rendering, or write "
                    "a template with {instruction} where the instruction goes",
                )
            )
    return problems


def _check_goal(r: Recipe, value: str, g: Goal, at: Path) -> list[Problem]:
    tools = tools_by_name(r)
    secrets = [s.name for s in r.application.secrets]
    sensitive = [t.name for t in r.application.tools if t.sensitive]
    out: list[Problem] = []

    def bad(key: str, message: str, fix: str) -> None:
        out.append(((*at, key) if at[0] == "generate" else at, f"goal {value!r}: {message}", fix))

    if g.kind == "exfiltrate":
        if not secrets:
            bad("kind", "exfiltrate needs a secret to leak", "declare application.secrets")
        elif g.secret is not None and g.secret not in secrets:
            bad(
                "secret",
                f"secret {g.secret!r} is not declared (declared: {_named(secrets)})",
                "name one of application.secrets",
            )
    if g.kind not in CALL_KINDS:
        for key in ("tool", "argument", "value"):
            if getattr(g, key) is not None:
                bad(key, f"`{key}` applies to call_tool and change_argument only", f"remove {key}")
        return out
    if g.tool is None:
        eligible = (
            sensitive if g.kind == "call_tool" else [t for t in tools if parameters_of(tools[t])]
        )
        if not eligible:
            what = "a sensitive tool" if g.kind == "call_tool" else "a tool with parameters"
            bad("kind", f"{g.kind} needs {what} in application.tools", f"declare {what}")
        if g.argument is not None:
            bad("argument", "an argument needs its tool", "add `tool:` beside `argument:`")
        return out
    tool = tools.get(g.tool)
    if tool is None:
        bad(
            "tool",
            f"tool {g.tool!r} is not declared in application.tools (declared: "
            f"{_named(list(tools))})",
            "declare it, or name a declared tool",
        )
        return out
    if g.kind == "call_tool" and not tool.sensitive:
        bad(
            "tool",
            f"tool {g.tool!r} is not sensitive, so calling it is no attack "
            f"(sensitive: {_named(sensitive)})",
            "mark it `sensitive: true` in application.tools, or name a sensitive tool",
        )
    params = parameters_of(tool)
    if g.argument is not None and g.argument not in params:
        bad(
            "argument",
            f"{g.argument!r} is not a parameter of tool {g.tool!r} (its parameters: "
            f"{_named(params)})",
            "name one of the tool's parameters, or add it to its `parameters`",
        )
    if g.kind == "change_argument" and not params:
        bad("tool", f"tool {g.tool!r} has no parameters to change", "name a tool with parameters")
    return out
