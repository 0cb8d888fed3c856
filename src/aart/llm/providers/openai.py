"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp server,
LM Studio, hosted gateways."""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

import aiohttp

from ...errors import ConfigError, TransientError
from ..endpoints import allowed, how_to_allow, refuse
from ..http_status import is_per_request, status_error
from ..structured import schema_instructions
from ..types import GenerateConfig, Message, RawResponse, Usage
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

    def _http(self) -> aiohttp.ClientSession:
        # aiohttp rather than httpx: httpcore's pool costs O(connections) per request and caps
        # out near 120 requests/s at 64 concurrent connections on these CPUs.
        # A session is bound to the event loop that created it; the sync facades run one loop
        # per call, so make a session per loop.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(
                    total=self.options.timeout, connect=min(10.0, self.options.timeout)
                ),
                connector=aiohttp.TCPConnector(limit=0),
            )
            self._client_loop = loop
        return self._client

    def _body(
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
        url = f"{self.base_url}/chat/completions"
        while True:
            body = self._body(messages, config, schema)
            try:
                async with self._http().post(url, json=body) as resp:
                    status, text = resp.status, await resp.text()
                    retry_after = resp.headers.get("retry-after")
            except TimeoutError as e:
                raise TransientError(f"timeout talking to {self.base_url}") from e
            except aiohttp.ClientError as e:
                raise TransientError(
                    f"cannot reach {self.base_url} ({type(e).__name__}); is the server "
                    "running? set OPENAI_BASE_URL or the recipe's base_url"
                ) from e
            if schema is not None and self.mode != "prompt" and format_rejected(status, text):
                # The server rejected our response_format: fall back and remember it.
                self.mode = MODES[MODES.index(self.mode) + 1]
                continue
            return self._parse(status, text, retry_after)

    def _parse(self, status: int, text: str, retry_after: str | None) -> RawResponse:
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
