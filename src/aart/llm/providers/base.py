"""The provider interface every backend implements, and the registry that names them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...errors import ConfigError, ProviderError
from ...injection import ToolSpec
from ..types import GenerateConfig, Message, RawResponse


@dataclass
class ModelOptions:
    """Per-endpoint settings; every field may come from a recipe, a flag or the environment."""

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    #: seconds for an answer; for a streaming provider, for its first token (time queued
    #: included), after which ``idle_timeout`` bounds each pause between tokens
    timeout: float = 120.0
    idle_timeout: float = 60.0
    #: seconds a call may take in all, however its answer keeps coming (a stream that never
    #: ends is cut there and kept as truncated)
    max_seconds: float = 900.0
    #: stream answers (OpenAI-compatible servers): tells a queued request from a stuck one
    stream: bool = True
    concurrency: int | None = None
    #: adapt the number of requests in flight to the endpoint's load (AIMD), up to
    #: ``concurrency``; False: always ``concurrency``
    adaptive: bool = True
    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    rpm: float | None = None
    tpm: float | None = None
    structured_retries: int = 2
    n_ctx: int = 4096
    n_threads: int | None = None
    #: how structured answers are decoded: "constrained" (the server or engine enforces the
    #: JSON schema) or "free" (the schema is described in the prompt, the answer parsed
    #: tolerantly and re-asked when invalid); None: the provider's measured default
    decoding: str | None = None
    #: base_url and api_key_env come from a shared document (a recipe): a secret from the
    #: environment then goes only to a host the user bound it to (see aart.llm.endpoints)
    untrusted: bool = False
    #: the document named api_key_env itself; if not, an unbound host gets no key (rather
    #: than a usage error), since it most likely needs none
    key_named: bool = True
    #: (url, variable) bindings the user gave for this invocation (a --base-url flag)
    bound: tuple[tuple[str, str], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


class ModelAPI(ABC):
    """One chat model behind some transport. Implementations raise
    :class:`~aart.errors.TransientError` for what is worth retrying and
    :class:`~aart.errors.ProviderError` for the rest."""

    #: concurrency used when the options do not set one
    default_concurrency: int = 8
    #: whether :meth:`complete` enforces its own deadlines (a streaming provider: first
    #: token, then idle), so the model layer must not cut a long answer that keeps coming
    manages_deadlines: bool = False

    def __init__(self, model: str, options: ModelOptions) -> None:
        self.model = model
        self.options = options

    @property
    def endpoint(self) -> str:
        """What identifies the endpoint in cache keys and logs (never a secret)."""
        return self.model

    @property
    def server(self) -> str:
        """What shares capacity: models on the same server share one adaptive limit."""
        return self.endpoint

    @abstractmethod
    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        """Run one completion."""

    #: whether :meth:`complete_tools` is implemented (the target can be offered tools)
    takes_tools: bool = False

    async def complete_tools(
        self, messages: list[Message], config: GenerateConfig, tools: tuple[ToolSpec, ...]
    ) -> RawResponse:
        """Run one completion offering ``tools``; the calls made are in ``tool_calls``."""
        raise ConfigError(
            f"{self.endpoint} cannot be offered tools; use an OpenAI-compatible model, the "
            "embedded model, an HTTP target or a Python target"
        )

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections or engines."""

    def batch_api(self) -> BatchAPI | None:
        """This endpoint's batch API (file upload, batches, and the wire format of their
        lines), if it has one; None: its calls are answered online."""
        return None


class BatchAPI(Protocol):
    """A provider's batch endpoints and the wire format of a batch's lines, which the batch
    transport (aart.llm.transport.batch) needs to queue, submit and read answers; see
    providers/openai_batch.py. Its HTTP calls retry under the model's RetryPolicy."""

    def request_body(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> dict[str, Any]: ...

    def parse_answer(self, status: int, text: str) -> RawResponse:
        """A successful answer (``status`` 200) as the online call would return it."""
        ...

    def answer_error(self, status: int, text: str) -> ProviderError:
        """What an error answer to one request of a batch raises for its job."""
        ...

    def on_format_rejected(self, status: int, text: str, schema: dict[str, Any] | None) -> bool:
        """Whether this answer rejected the structured-output format; if so, the next
        request (``request_body``) asks in the next one."""
        ...

    async def upload(self, content: bytes) -> str: ...
    async def create(self, file_id: str, submission: str) -> dict[str, Any]: ...
    async def get(self, batch_id: str) -> dict[str, Any]: ...
    async def list(self) -> list[dict[str, Any]]: ...
    async def content(self, file_id: str) -> bytes: ...


ProviderFactory = Callable[[str, ModelOptions], ModelAPI]
_REGISTRY: dict[str, ProviderFactory] = {}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Register a provider under ``name`` (the part before the slash in a model name)."""
    _REGISTRY[name] = factory


def provider_names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def check_model_name(model_name: str) -> tuple[str, str]:
    """(provider, model) of a ``provider/model`` name, or a ConfigError naming the fix."""
    _load_builtins()
    provider, sep, model = model_name.partition("/")
    if not sep or not model:
        raise ConfigError(
            f"model name {model_name!r} is not of the form provider/model; "
            f"for example openai/gpt-4o-mini, local/default or fake/test "
            f"(providers: {', '.join(sorted(_REGISTRY))})"
        )
    if provider not in _REGISTRY:
        raise ConfigError(
            f"unknown provider {provider!r} in {model_name!r}; "
            f"use one of: {', '.join(sorted(_REGISTRY))}"
        )
    return provider, model


def create_api(model_name: str, options: ModelOptions | None = None) -> ModelAPI:
    """Build the :class:`ModelAPI` for a ``provider/model`` name."""
    provider, model = check_model_name(model_name)
    return _REGISTRY[provider](model, options or ModelOptions())


_loaded = False


def _load_builtins() -> None:
    # Built-ins register through the same call as plugins; imported late to keep
    # `import aart` fast and free of optional dependencies.
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib.metadata import entry_points

    from . import fake, litellm, local, openai  # noqa: F401

    for ep in entry_points(group="aart.providers"):
        register_provider(ep.name, ep.load())
