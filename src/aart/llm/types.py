"""Value types of the model layer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


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
    return sum(len(m.content) for m in messages) // 4 + 4 * len(messages)
