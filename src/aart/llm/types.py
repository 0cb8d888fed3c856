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


def estimate_tokens(messages: list[Message]) -> int:
    """Rough token count (4 characters a token) for rate limits, dry runs and the usage of a
    call whose server reported none."""
    return sum(len(m.content) for m in messages) // 4 + 4 * len(messages)
