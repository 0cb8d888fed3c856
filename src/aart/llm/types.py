"""Value types of the model layer."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..injection import ToolCall, ToolSpec

Role = Literal["system", "user", "assistant", "tool"]

#: the most tool calls one answer may carry, and the most characters of one call's
#: arguments kept: a hostile or looping model's output stays bounded (what is cut is said so
#: in ``ToolCall.raw``'s end)
MAX_TOOL_CALLS = 16
MAX_ARGUMENT_CHARS = 20_000


@dataclass(frozen=True)
class Message:
    """One turn. An assistant turn may carry the tool calls it made (``tool_calls``); a
    ``tool`` turn is a tool's result, answering the call ``tool_call_id`` of tool ``name``."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""

    def openai(self) -> dict[str, Any]:
        """The message as the OpenAI chat API takes it (a plain turn: role and content)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            # empty text rather than null or none: llama-cpp-python's server refuses null,
            # and its function-calling template reads the field
            out["tool_calls"] = [openai_call(c, i) for i, c in enumerate(self.tool_calls)]
        if self.role == "tool":  # the call it answers names the tool
            out["tool_call_id"] = self.tool_call_id
        return out


def openai_call(call: ToolCall, i: int = 0) -> dict[str, Any]:
    """A recorded call as an assistant message's ``tool_calls`` item."""
    args = call.raw if call.raw and not call.arguments else json.dumps(call.arguments)
    return {
        "id": call.id or f"call_{i}",
        "type": "function",
        "function": {"name": call.name, "arguments": args},
    }


def bounded_call(name: Any, arguments: Any, id: Any = "") -> ToolCall:
    """A tool call as an answer (a model's, an HTTP target's, a Python target's) gave it,
    its name and arguments bounded (:data:`MAX_ARGUMENT_CHARS`)."""
    if not isinstance(arguments, str | type(None)):
        try:
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            arguments = str(arguments)
    text = arguments or ""
    if len(text) > MAX_ARGUMENT_CHARS:
        # no longer JSON: kept as raw text, so the checks still read what was written
        return ToolCall(name=str(name)[:64], raw=text[:MAX_ARGUMENT_CHARS], id=str(id or "")[:64])
    return ToolCall.parse(str(name)[:64], text, str(id or "")[:64])


def parse_tool_calls(items: Any) -> list[ToolCall]:
    """OpenAI-style ``tool_calls`` (``[{id, function: {name, arguments}}]``, or the flat
    ``[{name, arguments}]`` a Python target may write), at most :data:`MAX_TOOL_CALLS`;
    items of another shape are skipped."""
    out: list[ToolCall] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        inner = item.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else item
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            continue
        out.append(bounded_call(name, fn.get("arguments"), item.get("id", "")))
        if len(out) >= MAX_TOOL_CALLS:
            break
    return out


_INLINE_CALL = re.compile(r"functions\.([A-Za-z_][A-Za-z0-9_.-]{0,63}):[ \t]*\n?")


def inline_calls(
    text: str, tools: tuple[ToolSpec, ...] | list[ToolSpec]
) -> tuple[str, list[ToolCall]]:
    """A message that writes calls as the format does (``functions.<name>:`` and a JSON
    object), split into the text before them and the calls to declared tools (at most
    MAX_TOOL_CALLS); a name no tool has is left as text."""
    body = text.strip().removeprefix("message:").strip()
    names = {t.name for t in tools}
    calls: list[ToolCall] = []
    first = None
    decoder = json.JSONDecoder()
    for m in _INLINE_CALL.finditer(body):
        if m.group(1) not in names or len(calls) >= MAX_TOOL_CALLS:
            continue
        rest = body[m.end() :].lstrip()
        try:
            args, _ = decoder.raw_decode(rest)
        except ValueError:
            args = rest[:MAX_ARGUMENT_CHARS]  # kept as raw text
        calls.append(bounded_call(m.group(1), args, f"call_{len(calls)}"))
        first = m.start() if first is None else first
    return (body if first is None else body[:first].strip()), calls


@dataclass(frozen=True)
class GenerateConfig:
    temperature: float = 0.7
    max_tokens: int = 1024
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens


@dataclass
class RawResponse:
    """What a provider returns for one HTTP/engine call."""

    text: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    #: seconds until the first token arrived (streaming providers), the queueing signal
    ttft: float | None = None
    #: the usage is counted by aart (the server sent none), not reported by the server
    estimated: bool = False
    #: the call was recorded (paid) already: a batch's answer, recorded when imported
    call_id: int | None = None
    #: the answer was cut at :func:`answer_limit` characters (or the call's time bound)
    truncated: bool = False
    #: the tools the model called (a call given ``tools``), recorded, never executed
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class ModelOutput:
    """What :meth:`aart.llm.Model.generate` returns."""

    text: str
    parsed: Any = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    latency: float = 0.0
    cached: bool = False
    call_id: int | None = None
    model: str = ""
    #: the answer was cut (see RawResponse.truncated): what is kept is its beginning
    truncated: bool = False
    #: the tools the model called (a call given ``tools``), recorded, never executed
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass(frozen=True)
class Call:
    """One request as a transport carries it: the model's name, the call's cache key (which
    also names it in a batch), what is asked, and the job it belongs to (``tag``)."""

    model: str
    key: str
    messages: list[Message]
    config: GenerateConfig
    schema: dict[str, Any] | None = None
    tag: str | None = None
    #: the tools offered (the OpenAI tools API); none: a plain call
    tools: tuple[ToolSpec, ...] = ()


#: the error of a call cut off in flight by a stop (Ctrl-C, another job's stop): not a failure
INTERRUPTED = "interrupted in flight (the run stopped)"


@dataclass
class CallRecord:
    """One paid call as the run store keeps it (never holds a secret)."""

    model: str
    cache_key: str
    prompt_tokens: int
    completion_tokens: int
    latency: float
    finish_reason: str
    #: None: a paid model without a price (shown as "unpriced", never as $0)
    cost: float | None
    error: str | None = None
    raw_text: str | None = None
    tag: str | None = None


def answer_limit(max_tokens: int) -> int:
    """The most characters of an answer aart keeps (stores, judges, shows): far beyond what
    ``max_tokens`` tokens can spell, so only an endpoint that ignores it is cut (a 50 MB
    reply is neither stored twice in run.db nor rendered into the reports)."""
    return max(20_000, 16 * max_tokens)


def estimate_tokens(messages: list[Message]) -> int:
    """Rough token count (4 characters a token) for rate limits, dry runs and the usage of a
    call whose server reported none."""
    calls = sum(len(c.raw) + len(json.dumps(c.arguments)) for m in messages for c in m.tool_calls)
    return (sum(len(m.content) for m in messages) + calls) // 4 + 4 * len(messages)
