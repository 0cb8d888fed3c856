"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp server,
LM Studio, hosted gateways."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from typing import Any

import aiohttp

from ...errors import ConfigError, TransientError
from ..endpoints import allowed, how_to_allow, refuse
from ..http_status import is_per_request, status_error
from ..structured import schema_instructions
from ..types import GenerateConfig, Message, RawResponse, Usage, estimate_tokens
from .base import ModelAPI, ModelOptions, register_provider

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Structured-output modes, best first; a server that rejects one falls back to the next:
# OpenAI's json_schema, llama-cpp-python's json_object with a schema (which it enforces by
# grammar), plain json_object, then the schema described in the prompt.
MODES = ("json_schema", "json_object_schema", "json_object", "prompt")
# A rejected response_format is recognised by what the error says; a 500 counts only when it
# names the format (llama-cpp-python answers json_schema with a 500 validation error).
_FORMAT_REJECTED = re.compile(r"response_format|json_schema|json_object|schema", re.I)


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
        if not key and self.base_url == DEFAULT_BASE_URL:
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

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}#{self.model}"

    @property
    def server(self) -> str:
        return self.base_url

    def _http(self) -> aiohttp.ClientSession:
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
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        msgs = [{"role": m.role, "content": m.content} for m in messages]
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
        """One request. Deadlines: ``timeout`` until the first token arrives (time queued
        included: a queued request is not a stuck one), then ``idle_timeout`` between tokens;
        without streaming, ``timeout`` for the whole answer."""
        url = f"{self.base_url}/chat/completions"
        while True:
            body = self.request_body(messages, config, schema)
            if self.options.stream:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
            start = time.monotonic()
            first_deadline = start + self.options.timeout
            resp: aiohttp.ClientResponse | None = None
            finished = False
            try:
                resp = await asyncio.wait_for(
                    self._http().post(url, json=body), first_deadline - time.monotonic()
                )
                if resp.status == 200 and resp.content_type == "text/event-stream":
                    raw = await self._read_stream(resp, messages, start)
                    finished = True
                    return raw
                status = resp.status
                retry_after = resp.headers.get("retry-after")
                text = await asyncio.wait_for(resp.text(), first_deadline - time.monotonic())
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
                raise TransientError(
                    f"cannot reach {self.base_url} ({type(e).__name__}); is the server "
                    "running? set OPENAI_BASE_URL or the recipe's base_url"
                ) from e
            finally:
                if resp is not None:
                    # an abandoned request's connection is closed, so the server sees it go
                    resp.release() if finished else resp.close()
            if schema is not None and self.mode != "prompt" and format_rejected(status, text):
                # The server rejected our response_format: fall back and remember it.
                self.mode = MODES[MODES.index(self.mode) + 1]
                continue
            return self.parse_answer(status, text, retry_after)

    async def _read_stream(
        self, resp: aiohttp.ClientResponse, messages: list[Message], start: float
    ) -> RawResponse:
        """Collect a server-sent-events answer under the first-token and idle deadlines."""
        parts: list[str] = []
        chunks = 0
        finish: str | None = None
        usage: Usage | None = None
        ttft: float | None = None
        while True:
            if ttft is None:
                wait = start + self.options.timeout - time.monotonic()
            else:
                wait = self.options.idle_timeout
            try:
                line = await asyncio.wait_for(resp.content.readline(), max(0.0, wait))
            except TimeoutError as e:
                spent = (estimate_tokens(messages), chunks)
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
            if isinstance(event, dict) and event.get("error"):
                raise TransientError(f"error in the stream from {self.base_url}: {payload[:200]}")
            if event.get("usage"):
                u = event["usage"]
                usage = Usage(
                    int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
                )
            for choice in event.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    if ttft is None:
                        ttft = time.monotonic() - start
                    parts.append(piece)
                    chunks += 1
                finish = choice.get("finish_reason") or finish
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
        )

    def parse_answer(self, status: int, text: str, retry_after: str | None = None) -> RawResponse:
        """A chat-completion answer (online, or from a batch's output file)."""
        if status >= 400:
            raise status_error(
                status,
                text,
                self.base_url,
                retry_after=retry_after,
                auth_hint=self.withheld or f"check {self.options.api_key_env}",
                not_found_hint=f"unknown model {self.model!r} or wrong base URL",
            )
        try:
            data = json.loads(text)
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError) as e:
            # A half-written body (dropped connection mid-response) is worth a retry.
            raise TransientError(f"malformed response from {self.base_url}: {e!r}") from e
        u = data.get("usage") or {}
        return RawResponse(
            text=content,
            usage=Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)),
            finish_reason=choice.get("finish_reason") or "stop",
        )

    async def aclose(self) -> None:
        if self._client is not None and self._client_loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None


register_provider("openai", OpenAIChatAPI)
