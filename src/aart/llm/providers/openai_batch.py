"""The batch API of an OpenAI-compatible server (``/v1/files`` + ``/v1/batches``: OpenAI,
Together, the LiteLLM proxy ...), and the batch file format, which ``vllm run-batch`` reads
and writes too. It goes through the chat provider's public hooks (its session, request body,
answer parser and structured-output fallback), and its HTTP calls retry under the model's
one :class:`~aart.llm.limits.RetryPolicy`."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp

from ...errors import EndpointDown, ProviderError, TransientError
from ..http_status import is_retryable, status_error
from ..limits import RetryPolicy
from ..types import GenerateConfig, Message, RawResponse, Usage
from .openai import OpenAIChatAPI, format_rejected, parse_usage

CHAT_URL = "/v1/chat/completions"
#: error codes of requests a batch never ran: asked again in the next batch
NOT_RUN = ("batch_expired", "batch_cancelled", "batch_failed")


class Queued(Protocol):
    custom_id: str
    body: dict[str, Any]


def request_lines(requests: Iterable[Queued]) -> Iterator[bytes]:
    """The OpenAI batch input format, which ``vllm run-batch`` reads too."""
    for r in requests:
        line = {"custom_id": r.custom_id, "method": "POST", "url": CHAT_URL, "body": r.body}
        yield json.dumps(line).encode() + b"\n"


@dataclass
class ResultLine:
    """One line of a batch's output or error file, checked."""

    status: int
    #: the answer's usage (a 200 with a body), else None
    usage: Usage | None
    finish_reason: str
    #: what is kept for the job: the answer's body, or the error
    text: str
    #: not run (expired, cancelled), or worth another try: the next batch asks again
    again: bool


def read_result(line: dict[str, Any]) -> ResultLine:
    """A result line as OpenAI (and ``vllm run-batch``) write it. Raises ValueError or
    TransientError when the line is unusable (say, a negative token count)."""
    response = line.get("response") or {}
    error = line.get("error") or {}
    if not isinstance(response, dict) or not isinstance(error, dict):
        raise ValueError("response and error must be objects")
    code = response.get("status_code") or 0
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < 600:
        raise ValueError(f"status_code {str(code)[:20]!r} is not an HTTP status")
    status = code
    body = response.get("body")
    if status == 200 and isinstance(body, dict):
        usage = parse_usage(body.get("usage"), "the batch")
        choices = body.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        return ResultLine(200, usage, str(finish or "stop"), json.dumps(body), again=False)
    text = json.dumps(body if body is not None else error)
    again = error.get("code") in NOT_RUN or (
        is_retryable(status) and not format_rejected(status, text)
    )
    return ResultLine(status, None, "", text, again)


class OpenAIBatchAPI:
    """The file and batch endpoints of an OpenAI-compatible server, with the chat model's
    session and key (which goes to the same host as its chat requests, no other)."""

    def __init__(self, api: OpenAIChatAPI) -> None:
        self.api = api
        self.base = api.base_url
        o = api.options
        self.retry = RetryPolicy(o.max_retries, o.backoff_base, o.backoff_max)
        self._rng = random.Random()

    # -- the wire format of one request ---------------------------------------------------
    def request_body(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        return self.api.request_body(messages, config, schema)

    def parse_answer(self, status: int, text: str) -> RawResponse:
        return self.api.parse_answer(status, text)

    def answer_error(self, status: int, text: str) -> ProviderError:
        return status_error(status, text, f"{self.base} (batch)")

    def on_format_rejected(self, status: int, text: str, schema: dict[str, Any] | None) -> bool:
        return self.api.on_format_rejected(status, text, schema)

    # -- files and batches ----------------------------------------------------------------
    async def _once(self, method: str, path: str, **kw: Any) -> bytes:
        try:
            async with self.api.session().request(method, self.base + path, **kw) as resp:
                data = await resp.read()
                if resp.status < 400:
                    return data
                raise status_error(
                    resp.status,
                    data.decode("utf-8", "replace"),
                    f"{self.base}{path}",
                    retry_after=resp.headers.get("retry-after"),
                    auth_hint=self.api.auth_hint,
                    not_found_hint="this server offers no batch API (/v1/files, "
                    "/v1/batches); run without --batch, or use `aart batch export` for "
                    "vllm run-batch",
                )
        except TimeoutError as e:
            raise TransientError(f"no answer from {self.base}{path}") from e
        except aiohttp.ClientError as e:
            raise TransientError(f"cannot reach {self.base}{path} ({type(e).__name__})") from e

    async def _request(self, method: str, path: str, **kw: Any) -> bytes:
        try:
            return await self.retry.call(lambda: self._once(method, path, **kw), self._rng)
        except ProviderError as err:
            raise EndpointDown(
                f"{err}; the batches submitted so far are stored: re-run the same command "
                "to pick them up"
            ) from err

    async def _json(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        data = await self._request(method, path, **kw)
        try:
            out = json.loads(data)
        except ValueError as e:
            raise EndpointDown(f"{self.base}{path} answered something other than JSON") from e
        if not isinstance(out, dict):
            raise EndpointDown(f"{self.base}{path} answered something other than an object")
        return out

    async def upload(self, content: bytes) -> str:
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field(
            "file",
            content,
            filename=f"aart-{int(time.time())}.jsonl",
            content_type="application/jsonl",
        )
        return str((await self._json("POST", "/files", data=form))["id"])

    async def create(self, file_id: str, submission: str) -> dict[str, Any]:
        return await self._json(
            "POST",
            "/batches",
            json={
                "input_file_id": file_id,
                "endpoint": CHAT_URL,
                "completion_window": "24h",
                "metadata": {"aart_submission": submission},
            },
        )

    async def get(self, batch_id: str) -> dict[str, Any]:
        return await self._json("GET", f"/batches/{batch_id}")

    async def list(self) -> list[dict[str, Any]]:
        data = (await self._json("GET", "/batches?limit=100")).get("data")
        return [b for b in data or [] if isinstance(b, dict)]

    async def content(self, file_id: str) -> bytes:
        return await self._request("GET", f"/files/{file_id}/content")
