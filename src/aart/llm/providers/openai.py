"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp server,
LM Studio, hosted gateways."""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import time
from typing import Any

import aiohttp

from ...errors import ConfigError, EndpointDown, ProviderError, TransientError
from ...injection import ToolSpec
from ...redaction import remember
from ..deadline import within
from ..endpoints import allowed, how_to_allow, refuse
from ..http_status import (
    MAX_REPLY_BYTES,
    decode_body,
    is_per_request,
    read_bounded,
    status_error,
)
from ..structured import schema_instructions
from ..types import (
    GenerateConfig,
    Message,
    RawResponse,
    Usage,
    answer_limit,
    estimate_tokens,
    inline_calls,
    parse_tool_calls,
)
from .base import ModelAPI, ModelOptions, register_provider

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Structured-output modes, best first; a server that rejects one falls back to the next:
# OpenAI's json_schema, llama-cpp-python's json_object with a schema (which it enforces by
# grammar), plain json_object, then the schema described in the prompt.
MODES = ("json_schema", "json_object_schema", "json_object", "prompt")
# A rejected response_format is recognised by what the error says; a 500 counts only when it
# names the format (llama-cpp-python answers json_schema with a 500 validation error).
_FORMAT_REJECTED = re.compile(r"response_format|json_schema|json_object|schema", re.I)


#: the longest server-sent event line read; a longer one fails its call
MAX_EVENT_BYTES = 1 << 20


def _malformed(where: str, what: str) -> TransientError:
    return TransientError(f"malformed response from {where}: {what}")


def _count(value: Any, name: str, where: str) -> int:
    """A token count: a non-negative finite number (absent: 0)."""
    if value is None:
        return 0
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0:
        raise _malformed(where, f"usage.{name} is {str(value)[:40]!r}, not a token count")
    return int(value)


def parse_usage(u: Any, where: str) -> Usage:
    """A usage object as the server reported it, validated."""
    if u is None:
        return Usage()
    if not isinstance(u, dict):
        raise _malformed(where, f"usage is {type(u).__name__}, not an object")
    return Usage(
        _count(u.get("prompt_tokens"), "prompt_tokens", where),
        _count(u.get("completion_tokens"), "completion_tokens", where),
    )


def _choices(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise _malformed(where, f"choices is {str(value)[:60]!r}, not a list of objects")
    return value


def _text(message: Any, name: str, where: str) -> str:
    """The content of a message (or a stream's delta): text, possibly none."""
    if message is None:
        return ""
    if not isinstance(message, dict):
        raise _malformed(where, f"{name} is {type(message).__name__}, not an object")
    content = message.get("content")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise _malformed(where, f"{name}.content is {type(content).__name__}, not text")
    return content


#: tokenizer endpoints (path under the server's root): the field of the answer holding the
#: count (or the tokens) and the request body
TOKENIZERS: dict[str, Any] = {
    "/extras/tokenize/count": lambda model, text: ("count", {"model": model, "input": text}),
    "/tokenize": lambda model, text: ("tokens", {"content": text}),
}


#: this process's requests in flight, by server (base URL)
_ACTIVE: dict[str, int] = {}


class _LineReader:
    """Lines of a stream, each at most ``limit`` bytes (aiohttp's readline raises a bare
    ValueError on a long one)."""

    def __init__(self, stream: aiohttp.StreamReader, limit: int) -> None:
        self.stream, self.limit = stream, limit
        self.buf = bytearray()

    async def readline(self) -> bytes:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[: i + 1])
                del self.buf[: i + 1]
                return line
            if len(self.buf) > self.limit:
                raise ProviderError(
                    f"a stream event over {self.limit >> 10} KB (malformed or hostile "
                    "answer); not read"
                )
            chunk = await self.stream.readany()
            if not chunk:
                line = bytes(self.buf)
                self.buf.clear()
                return line
            self.buf.extend(chunk)


def format_rejected(status: int, text: str) -> bool:
    """Whether an error answer means "this response_format is not supported here"."""
    if is_per_request(text):
        return False
    if status in (400, 422):
        return True
    return status == 500 and bool(_FORMAT_REJECTED.search(text))


class OpenAIChatAPI(ModelAPI):
    manages_deadlines = True  # first token, then idle: see complete()

    def __init__(self, model: str, options: ModelOptions) -> None:
        super().__init__(model, options)
        self.base_url = (
            options.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        ).rstrip("/")
        key = os.environ.get(options.api_key_env)
        remember(options.api_key_env, key)
        #: why no key was sent, for the hint of a 401
        self.withheld = ""
        if (
            key
            and options.untrusted
            and not allowed(self.base_url, options.api_key_env, options.bound)
        ):
            if options.key_named:
                raise refuse(f"openai/{model}'s base_url", self.base_url, options.api_key_env)
            key = None
            self.withheld = (
                f"aart did not send ${options.api_key_env} to this host, which the recipe "
                f"chose; if it needs the key: `{how_to_allow(self.base_url, options.api_key_env)}`"
            )
        if not key and self.base_url == DEFAULT_BASE_URL and not options.extra.get("files_only"):
            raise ConfigError(
                f"openai/{model} needs an API key: export {options.api_key_env}=... "
                "(or set OPENAI_BASE_URL / the recipe's base_url to a local server)"
            )
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client: aiohttp.ClientSession | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        # Free decoding skips straight to describing the schema in the prompt.
        default = "prompt" if options.decoding == "free" else MODES[0]
        self.mode = options.extra.get("structured_mode", default)
        #: the server's tokenizer endpoint (None: not looked for yet, False: it has none)
        self._tokenizer: str | bool | None = None
        #: prompt tokens counted by that tokenizer, and what chars/4 said of the same prompts
        self._calibration = [0, 0]

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}#{self.model}"

    @property
    def server(self) -> str:
        return self.base_url

    @property
    def auth_hint(self) -> str:
        """What a 401 from this server's host should tell the user."""
        return self.withheld or f"check {self.options.api_key_env}"

    def session(self) -> aiohttp.ClientSession:
        """This event loop's HTTP session to the server, with the key (sent to this host and
        no other): the chat calls' and the batch API's (providers/openai_batch.py)."""
        # aiohttp rather than httpx: httpcore's pool costs O(connections) per request and caps
        # out near 120 requests/s at 64 concurrent connections on these CPUs.
        # A session is bound to the event loop that created it; the sync facades run one loop
        # per call, so make a session per loop. Deadlines are ours (see complete), so the
        # session only bounds connecting.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=None, connect=min(10.0, self.options.timeout)),
                connector=aiohttp.TCPConnector(limit=0),
            )
            self._client_loop = loop
        return self._client

    def request_body(
        self,
        messages: list[Message],
        config: GenerateConfig,
        schema: dict[str, Any] | None,
        tools: tuple[ToolSpec, ...] = (),
    ) -> dict[str, Any]:
        msgs = [m.openai() for m in messages]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": msgs,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
        }
        if config.seed is not None:
            body["seed"] = config.seed
        if config.stop:
            body["stop"] = list(config.stop)
        if tools:
            body["tools"] = [t.openai() for t in tools]
            # said, not left to the default: llama-cpp-python's function-calling format
            # offers no tool without it
            body["tool_choice"] = "auto"
        if schema is not None:
            if self.mode == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema, "strict": False},
                }
            elif self.mode == "json_object_schema":
                body["response_format"] = {"type": "json_object", "schema": schema}
            elif self.mode == "json_object":
                body["response_format"] = {"type": "json_object"}
            if self.mode != "json_schema":
                msgs.insert(0, {"role": "system", "content": schema_instructions(schema)})
        return body

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        _ACTIVE[self.base_url] = _ACTIVE.get(self.base_url, 0) + 1
        try:
            raw = await self._complete(messages, config, schema)
        finally:
            _ACTIVE[self.base_url] -= 1
        if raw.estimated and raw.usage.prompt_tokens:
            raw.usage.prompt_tokens = await self._prompt_tokens(messages, raw.usage.prompt_tokens)
        return raw

    takes_tools = True

    async def complete_tools(
        self, messages: list[Message], config: GenerateConfig, tools: tuple[ToolSpec, ...]
    ) -> RawResponse:
        """One completion offering ``tools``, not streamed: a stream spreads a call's
        arguments over many deltas, and llama-cpp-python's server streams no tool call."""
        _ACTIVE[self.base_url] = _ACTIVE.get(self.base_url, 0) + 1
        try:
            raw = await self._complete(messages, config, None, tools)
        finally:
            _ACTIVE[self.base_url] -= 1
        if not raw.tool_calls:
            # llama-cpp-python 0.3's chatml-function-calling answers a call it did not
            # finish as the text "functions.<name>:": the call the model chose, kept
            said, calls = inline_calls(raw.text, tools)
            if calls:
                raw.text, raw.tool_calls = said, calls
        return raw

    async def _complete(
        self,
        messages: list[Message],
        config: GenerateConfig,
        schema: dict[str, Any] | None,
        tools: tuple[ToolSpec, ...] = (),
    ) -> RawResponse:
        """One request. Deadlines: ``timeout`` until the first token arrives (time queued
        included: a queued request is not a stuck one), then ``idle_timeout`` between tokens,
        and ``max_seconds`` in all; without streaming, ``timeout`` for the whole answer."""
        url = f"{self.base_url}/chat/completions"
        while True:
            body = self.request_body(messages, config, schema, tools)
            if self.options.stream and not tools:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
            start = time.monotonic()
            first_deadline = start + self.options.timeout
            resp: aiohttp.ClientResponse | None = None
            finished = False
            try:
                resp = await within(
                    self.session().post(url, json=body, allow_redirects=False),
                    first_deadline - time.monotonic(),
                )
                if 300 <= resp.status < 400:
                    # aiohttp would follow it, to any host, with the prompts (and every
                    # header but Authorization), and the answer would pass for the model's
                    where = resp.headers.get("location", "")[:120]
                    raise EndpointDown(
                        f"{self.base_url} redirects (HTTP {resp.status}) to {where or '?'}: aart "
                        "follows no redirect of a model endpoint; give the address it names as "
                        "the base URL"
                    )
                if resp.status == 200 and resp.content_type == "text/event-stream":
                    raw = await self._read_stream(resp, messages, config, start)
                    finished = not raw.truncated  # a cut stream's connection is closed
                    return raw
                status = resp.status
                retry_after = resp.headers.get("retry-after")
                data = await within(read_bounded(resp.content), first_deadline - time.monotonic())
                if data is None:
                    raise ProviderError(
                        f"{self.base_url} answered more than {MAX_REPLY_BYTES >> 20} MB "
                        f"to a request for {config.max_tokens} tokens; not read"
                    )
                text = decode_body(resp, data)
                finished = True
            except TimeoutError as e:
                # Sent but unanswered: the server may well compute it (llama-cpp-python's runs
                # a non-streamed request to the end), so its prompt counts. A connection that
                # never opened cost nothing.
                sent = not isinstance(e, aiohttp.ClientConnectionError)
                raise TransientError(
                    f"no answer from {self.base_url} within {self.options.timeout}s",
                    congested=True,
                    spent=(estimate_tokens(messages), 0) if sent else None,
                ) from e
            except aiohttp.ClientError as e:
                if resp is not None:  # it answered, then the connection broke
                    raise TransientError(
                        f"{self.base_url} broke off its answer ({type(e).__name__})",
                        spent=(estimate_tokens(messages), 0),
                    ) from e
                raise TransientError(
                    f"cannot reach {self.base_url} ({type(e).__name__}); is the server "
                    "running? set OPENAI_BASE_URL or the recipe's base_url"
                ) from e
            finally:
                if resp is not None:
                    # an abandoned request's connection is closed, so the server sees it go
                    resp.release() if finished else resp.close()
            if self.on_format_rejected(status, text, schema):
                continue
            return self.parse_answer(status, text, retry_after)

    def on_format_rejected(self, status: int, text: str, schema: dict[str, Any] | None) -> bool:
        """Whether this error answer rejected our response_format; if so, fall back to the
        next structured-output mode and remember it (online and batch requests alike)."""
        if schema is None or self.mode == "prompt" or not format_rejected(status, text):
            return False
        self.mode = MODES[MODES.index(self.mode) + 1]
        return True

    async def _read_stream(
        self,
        resp: aiohttp.ClientResponse,
        messages: list[Message],
        config: GenerateConfig,
        start: float,
    ) -> RawResponse:
        """Collect a server-sent-events answer under the first-token, idle and overall
        deadlines, keeping at most :func:`answer_limit` characters."""
        parts: list[str] = []
        kept = 0
        limit = answer_limit(config.max_tokens)
        truncated = False
        chunks = 0
        finish: str | None = None
        usage: Usage | None = None
        ttft: float | None = None
        lines = _LineReader(resp.content, MAX_EVENT_BYTES)
        end = start + self.options.max_seconds
        while True:
            if ttft is None:
                wait = start + self.options.timeout - time.monotonic()
            else:
                wait = self.options.idle_timeout
            overall = end - time.monotonic()
            try:
                line = await within(lines.readline(), max(0.0, min(wait, overall)))
            except TimeoutError as e:
                spent = (estimate_tokens(messages), chunks)
                if overall <= wait and ttft is not None:
                    # it keeps coming: keep what came, cut (and said to be cut)
                    truncated, finish = True, "length"
                    break
                if ttft is None:
                    raise TransientError(
                        f"no first token from {self.base_url} within {self.options.timeout}s "
                        "(queued behind other requests, or overloaded)",
                        congested=True,
                        spent=spent,
                    ) from e
                raise TransientError(
                    f"{self.base_url} stalled for {self.options.idle_timeout}s after {chunks} "
                    "tokens",
                    spent=spent,
                ) from e
            except aiohttp.ClientError as e:
                # The server dropped the connection mid-answer: llama-cpp-python's does when
                # another request arrives (it computes one at a time), so it is running.
                raise TransientError(
                    f"{self.base_url} cut the stream after {chunks} tokens, before the answer "
                    f"finished ({type(e).__name__}; a server that computes one request at a "
                    "time interrupts it when another arrives)",
                    congested=True,
                    spent=(estimate_tokens(messages), chunks),
                ) from e
            if not line:
                break  # the server closed the stream
            data = line.decode("utf-8", "replace").strip()
            if not data.startswith("data:"):
                continue  # blank separators, ": ping" comments, event names
            payload = data[5:].strip()
            if payload == "[DONE]":
                break
            try:
                event = json.loads(payload)
            except ValueError:
                continue
            if not isinstance(event, dict):
                raise TransientError(
                    f"malformed stream from {self.base_url}: an event is "
                    f"{type(event).__name__}, not an object ({payload[:80]})",
                    spent=(estimate_tokens(messages), chunks),
                )
            if event.get("error"):
                raise TransientError(f"error in the stream from {self.base_url}: {payload[:200]}")
            if event.get("usage"):
                usage = parse_usage(event["usage"], self.base_url)
            for choice in _choices(event.get("choices"), self.base_url):
                piece = _text(choice.get("delta"), "delta", self.base_url)
                if piece:
                    if ttft is None:
                        ttft = time.monotonic() - start
                    chunks += 1
                    keep = piece[: max(0, limit - kept)]
                    if keep:
                        parts.append(keep)
                        kept += len(keep)
                    truncated = truncated or len(keep) < len(piece)
                if choice.get("finish_reason"):
                    finish = str(choice["finish_reason"])
            if truncated:
                finish = finish or "length"
                break  # the rest is not read: the connection is closed
        if finish is None:
            # Ended before the answer did: llama-cpp-python's server cuts a stream short when
            # another request arrives (it computes one at a time). Too many in flight.
            raise TransientError(
                f"{self.base_url} ended the stream after {chunks} tokens, before the answer "
                "finished (a server that computes one request at a time interrupts it when "
                "another arrives)",
                congested=True,
                spent=(estimate_tokens(messages), chunks),
            )
        estimated = usage is None
        if usage is None:  # the server reported none (llama-cpp-python's): count it ourselves
            usage = Usage(estimate_tokens(messages), chunks)
        return RawResponse(
            text="".join(parts),
            usage=usage,
            finish_reason=finish,
            ttft=ttft if ttft is not None else time.monotonic() - start,
            estimated=estimated,
            truncated=truncated,
        )

    async def _prompt_tokens(self, messages: list[Message], estimate: int) -> int:
        """The prompt tokens of a streamed answer that reported no usage (llama-cpp-python's
        server): chars/4 ran 14-28% low there, so they are counted by the server's own
        tokenizer when it offers one. llama-cpp-python interrupts a running stream for any
        request, its tokenizer's too, so the tokenizer is asked only when none of this
        process's requests to the server is in flight; the others get the estimate scaled by
        what the counted ones measured."""
        if _ACTIVE.get(self.base_url, 0) == 0 and self._tokenizer is not False:
            counted = await self._count_prompt(messages)
            if counted is not None:
                self._calibration[0] += counted
                self._calibration[1] += estimate
                return counted
        exact, estimated = self._calibration
        return round(estimate * exact / estimated) if estimated else estimate

    async def _count_prompt(self, messages: list[Message]) -> int | None:
        """The prompt's tokens by the server's tokenizer (llama-cpp-python's
        ``/extras/tokenize/count``, llama.cpp's ``/tokenize``), the messages laid out as
        ChatML (the template of most local models); None when no tokenizer answers."""
        if self._tokenizer is False:
            return None
        text = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages)
        text += "<|im_start|>assistant\n"
        root = self.base_url.removesuffix("/v1")
        candidates = [self._tokenizer] if self._tokenizer else list(TOKENIZERS)
        for path in candidates:
            assert isinstance(path, str)
            field, body = TOKENIZERS[path](self.model, text)
            try:
                async with self.session().post(
                    root + path, json=body, timeout=aiohttp.ClientTimeout(total=10)
                ) as resp:
                    data = await resp.json(content_type=None) if resp.status == 200 else None
            except (aiohttp.ClientError, TimeoutError, ValueError):
                data = None
            value = data.get(field) if isinstance(data, dict) else None
            count = len(value) if isinstance(value, list) else value
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                self._tokenizer = path
                return count
        if self._tokenizer is None:
            self._tokenizer = False  # none here: stay with the estimate, ask no more
        return None

    def parse_answer(self, status: int, text: str, retry_after: str | None = None) -> RawResponse:
        """A chat-completion answer (online, or from a batch's output file). An answer of
        another shape is a malformed response (retried, then that job's failure)."""
        if status >= 400:
            raise status_error(
                status,
                text,
                self.base_url,
                retry_after=retry_after,
                auth_hint=self.auth_hint,
                not_found_hint=f"unknown model {self.model!r} or wrong base URL",
            )
        try:
            data = json.loads(text)
        except ValueError as e:
            # A half-written body (dropped connection mid-response) is worth a retry.
            raise TransientError(f"malformed response from {self.base_url}: {e!r}") from e
        if not isinstance(data, dict):
            raise TransientError(
                f"malformed response from {self.base_url}: {type(data).__name__}, not an object"
            )
        choices = _choices(data.get("choices"), self.base_url)
        if not choices:
            raise TransientError(f"malformed response from {self.base_url}: no choices")
        choice = choices[0]
        message = choice.get("message")
        content = _text(message, "message", self.base_url)
        calls: list[Any] = []
        if isinstance(message, dict):
            calls = message.get("tool_calls") or []
            if not calls and isinstance(message.get("function_call"), dict):
                calls = [{"function": message["function_call"]}]  # the legacy field
        return RawResponse(
            text=content,
            usage=parse_usage(data.get("usage"), self.base_url),
            finish_reason=str(choice.get("finish_reason") or "stop"),
            tool_calls=parse_tool_calls(calls),
        )

    def batch_api(self) -> Any:
        from .openai_batch import OpenAIBatchAPI  # which builds on this module

        return OpenAIBatchAPI(self)

    async def aclose(self) -> None:
        if self._client is not None and self._client_loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None


register_provider("openai", OpenAIChatAPI)
