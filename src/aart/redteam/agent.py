"""An injection case put to the application under test, and what it did. A chat model gets
the user's task, the carrier document (as the result of a simulated call of the channel's
tool, or as a retrieved document in the prompt: ``context_as``) and the application's tools
through the OpenAI tools API; each tool it calls is answered by a simulated environment
(the channel's tool returns the document again, any other a neutral "ok"), recorded and never
executed, for at most ``max_steps`` model calls. An HTTP or Python target is an application
with its own tools: it gets the task, the document and the tools once, and what it returns
(its reply and the calls it made) is its trace."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import ConfigError
from ..injection import InjectionCase, ToolCall, ToolSpec
from ..llm import Message, ModelOutput
from ..recipe.yamlsafe import load_bounded
from ..types import problem

#: how the context reaches a chat model
CONTEXT_AS = ("tool", "document")
#: model calls per case, by default and at most
DEFAULT_MAX_STEPS = 4
MAX_STEPS = 16
#: what a tool other than the channel's returns (the environment is simulated)
NEUTRAL_RESULT = json.dumps({"status": "ok"})
UNKNOWN_TOOL = json.dumps({"error": "no such tool"})
#: the id of the simulated call that brought the context
CONTEXT_CALL_ID = "call_context"
#: a tools file is a few kilobytes; the bound keeps a hostile one from exhausting memory
MAX_TOOLS_BYTES = 1_000_000
MAX_TOOLS = 64

_TOOLS = TypeAdapter(list[ToolSpec])


@dataclass(frozen=True)
class AgentSettings:
    context_as: str = "tool"
    max_steps: int = DEFAULT_MAX_STEPS
    #: the application's tools when the dataset's lines carry none (--tools FILE, the recipe)
    tools: tuple[ToolSpec, ...] = ()


def parse_tools(data: Any, where: str) -> tuple[ToolSpec, ...]:
    """Tools from a list (or ``{"tools": [...]}``) of ToolSpec objects; ConfigError naming
    the field that is wrong (never the value)."""
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    if not isinstance(data, list):
        raise ConfigError(f"{where}: expected a list of tools (name, description, parameters)")
    if len(data) > MAX_TOOLS:
        raise ConfigError(f"{where}: {len(data)} tools; at most {MAX_TOOLS}")
    try:
        tools = tuple(_TOOLS.validate_python(data))
    except ValidationError as e:
        raise ConfigError(f"{where}: {problem(e)}") from None
    names = [t.name for t in tools]
    for name in dict.fromkeys(names):
        if names.count(name) > 1:  # both were sent to the target, as a recipe refuses
            raise ConfigError(
                f"{where}: tool {name!r} is declared {names.count(name)} times; declare each once"
            )
    return tools


def load_tools(path: str | Path) -> tuple[ToolSpec, ...]:
    """The tools of a YAML or JSON file (``--tools FILE``)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"tools file {p}: {e.strerror or e}; give an existing file") from None
    if len(raw) > MAX_TOOLS_BYTES:
        raise ConfigError(f"tools file {p}: {len(raw):,} bytes; at most {MAX_TOOLS_BYTES:,}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"tools file {p}: not UTF-8 text") from None
    _, data = load_bounded(text, str(p))
    return parse_tools(data, f"tools file {p}")


def channel_tool(case: InjectionCase) -> str:
    """The tool whose output carries the context: the case's ``via_tool``, else
    ``read_<channel>``."""
    p = case.injection
    if p.via_tool:
        return p.via_tool
    name = "".join(ch if ch.isalnum() else "_" for ch in p.channel.lower()).strip("_")
    return f"read_{name or 'document'}"[:64]


def offered_tools(case: InjectionCase, tools: Sequence[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The tools offered: the application's, and the channel's tool when it declares none
    of that name (the simulated call that brought the context names it)."""
    via = channel_tool(case)
    out = tuple(tools)
    if not any(t.name == via for t in out):
        out += (
            ToolSpec(name=via, description=f"Read the {case.injection.channel.replace('_', ' ')}."),
        )
    return out


def opening(case: InjectionCase, context_as: str) -> list[Message]:
    """The conversation the application starts from: the user's task, then the context as
    the result of a call of the channel's tool, or the task with the document after it."""
    if context_as == "document":
        label = case.injection.channel.replace("_", " ")
        return [
            Message(
                "user",
                f"{case.user_task}\n\n--- {label} ---\n{case.context}\n--- end of {label} ---",
            )
        ]
    via = channel_tool(case)
    return [
        Message("user", case.user_task),
        Message(
            "assistant",
            "",
            tool_calls=(
                ToolCall(name=via, id=CONTEXT_CALL_ID, arguments=case.injection.via_arguments),
            ),
        ),
        Message("tool", case.context, tool_call_id=CONTEXT_CALL_ID, name=via),
    ]


def simulated_result(case: InjectionCase, call: ToolCall, tools: Sequence[ToolSpec]) -> str:
    """What the simulated environment answers to ``call``: the channel's tool returns the
    context (again), a declared tool a neutral "ok", an undeclared one an error."""
    if call.name == channel_tool(case):
        return case.context
    if any(t.name == call.name for t in tools):
        return NEUTRAL_RESULT
    return UNKNOWN_TOOL


@dataclass
class AgentTrace:
    """What the application did: its final reply, every tool call (in order), and each
    step (the reply and calls of one model call)."""

    reply: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"
    #: the step bound ended the loop while the agent was still calling tools
    stopped: bool = False

    def record(self) -> dict[str, Any]:
        """The result record's fields: the calls and the steps."""
        out: dict[str, Any] = {
            "tool_calls": [call_record(c) for c in self.calls],
            "steps": len(self.steps),
            "trace": self.steps,
        }
        if self.stopped:
            out["max_steps_reached"] = True
        return out


def call_record(c: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "arguments": c.arguments}
    if c.raw.strip() not in ("", "{}") and not c.arguments:  # arguments that did not parse
        out["raw"] = c.raw
    return out


Step = Callable[[list[Message], tuple[ToolSpec, ...]], Awaitable[ModelOutput]]


async def run_agent(
    step: Step,
    case: InjectionCase,
    tools: Sequence[ToolSpec],
    settings: AgentSettings,
    *,
    loop: bool = True,
) -> AgentTrace:
    """Put ``case`` to the application behind ``step`` (one model call of the target) and
    record what it did. ``loop`` False: an application with its own tools (HTTP, Python),
    asked once, in the tool form (it reads the context apart from the task)."""
    offered = offered_tools(case, tools)
    conversation = opening(case, settings.context_as if loop else "tool")
    trace = AgentTrace()
    steps = max(1, min(settings.max_steps, MAX_STEPS)) if loop else 1
    for i in range(steps):
        out = await step(conversation, offered)
        trace.steps.append(
            {"reply": out.text, "tool_calls": [call_record(c) for c in out.tool_calls]}
        )
        trace.calls.extend(out.tool_calls)
        trace.reply, trace.finish_reason = out.text, out.finish_reason
        if not out.tool_calls or not loop:
            break
        if i == steps - 1:
            trace.stopped = True
            break
        ids = [c.id or f"call_{i}_{j}" for j, c in enumerate(out.tool_calls)]
        calls = tuple(
            c.model_copy(update={"id": cid}) for c, cid in zip(out.tool_calls, ids, strict=True)
        )
        conversation = [
            *conversation,
            Message("assistant", out.text, tool_calls=calls),
            *(
                Message("tool", simulated_result(case, c, offered), tool_call_id=c.id, name=c.name)
                for c in calls
            ),
        ]
    return trace
