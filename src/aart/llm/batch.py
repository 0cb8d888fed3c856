"""Requests through a batch API (OpenAI's ``/v1/files`` + ``/v1/batches``, and every server
that offers them), or exported for ``vllm run-batch`` and imported back.

How it fits the job system: in batch mode a model call whose answer is not known yet is
*queued* instead of sent, and its job stops with :class:`Deferred` (it stays pending). When no
job can go further, the queued requests go out as one batch per endpoint; their answers come
back into ``run.db`` and the jobs run again. Now the calls find their answers and go through
the same validation as online answers (structured output, schema, re-asks); a job that needs
another call (a re-ask, a verifier, a judge) queues it for the next batch. A request is named
by its call's cache key, so nothing is asked twice, and the batch ids are stored before the
process waits for them: re-running picks up the batches in flight.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from ..errors import Deferred, EndpointDown, ProviderError, TransientError, UsageError
from .http_status import is_retryable, status_error
from .limits import Budget, Price
from .providers.openai import MODES, OpenAIChatAPI, format_rejected, parse_usage
from .storage import ANSWERED, CREATING, QUEUED, Batch, BatchRequest, RunStore
from .types import Call, CallRecord, GenerateConfig, Message, RawResponse, Usage

if TYPE_CHECKING:
    from .model import Model

#: OpenAI's limits per batch: 50,000 requests and a 200 MB input file
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1024 * 1024
#: batches a request may go through without an answer (expired, cancelled, failed) before
#: its job fails
MAX_TRIES = 3
TERMINAL = ("completed", "failed", "expired", "cancelled")
#: error codes of requests a batch never ran: asked again in the next batch
NOT_RUN = ("batch_expired", "batch_cancelled", "batch_failed")
CHAT_URL = "/v1/chat/completions"
log = logging.getLogger("aart")
#: the status kept for a request whose result line was unusable (its job fails with why)
MALFORMED = -1
#: the id prefix of requests written for `vllm run-batch` (no server to ask about them)
EXPORT = "export:"


@dataclass
class BatchSettings:
    """How a command uses batches: submitted to the server's batch API (polled every ``poll``
    seconds at first, backing off to ``poll_max``), or, with ``export_to``, written there for
    ``vllm run-batch``."""

    export_to: Path | None = None
    #: a `vllm run-batch` output file to store the answers of before the jobs run
    import_from: Path | None = None
    poll: float = 5.0
    poll_max: float = 60.0
    #: the queue :meth:`start` made last, for the caller's report
    made: BatchQueue | None = None

    def start(self, store: Any, budget: Budget | None) -> BatchQueue:
        """The batch transport of a run: its requests and answers live in ``store`` (a
        run's ``run.db``, so they survive a crash)."""
        if getattr(store, "batches", None) is None:
            raise UsageError("batch mode needs a run directory to keep its requests in")
        self.made = BatchQueue(
            store,
            budget=budget,
            poll=self.poll,
            poll_max=self.poll_max,
            progress=lambda msg: log.info("%s", msg),
            export_to=self.export_to,
            import_from=self.import_from,
        )
        return self.made

    def queue(self, db: RunStore, budget: Budget | None) -> BatchQueue:
        """The name before the transport seam."""
        return self.start(db, budget)


def custom_id(tag: str | None, key: str) -> str:
    """The job (``tag``) the request belongs to, and which of its calls (the cache key)."""
    return f"{tag[:48]}#{key[:16]}" if tag else key[:32]


def request_lines(requests: Iterable[BatchRequest]) -> Iterator[bytes]:
    """The OpenAI batch input format, which ``vllm run-batch`` reads too."""
    for r in requests:
        line = {"custom_id": r.custom_id, "method": "POST", "url": CHAT_URL, "body": r.body}
        yield json.dumps(line).encode() + b"\n"


class BatchQueue:
    """The run's batch requests and answers, shared by every model built in batch mode: the
    batch transport (a call is answered if a batch brought its answer, else queued and
    :class:`Deferred`)."""

    online = False

    def __init__(
        self,
        db: RunStore,
        *,
        budget: Budget | None = None,
        poll: float = 5.0,
        poll_max: float = 60.0,
        progress: Callable[[str], None] | None = None,
        export_to: Path | None = None,
        import_from: Path | None = None,
    ) -> None:
        self.db = db
        #: write the queued requests here for `vllm run-batch` instead of submitting them
        self.export_to = export_to
        self.import_from = import_from
        #: (answers stored, exported requests left unanswered) by the import
        self.imported: tuple[int, int] | None = None
        self.tables = db.batches()
        self.budget = budget
        self.poll, self.poll_max = poll, poll_max
        self.say = progress or (lambda _msg: None)
        #: the models in batch mode, by name (for prices, accounting and their endpoint)
        self.models: dict[str, Model] = {}
        #: batches submitted by this invocation
        self.submitted = 0
        #: result lines not stored, and why (foreign, malformed, unusable answers)
        self.rejected: list[str] = []

    # -- what a model call sees -------------------------------------------------------------
    @staticmethod
    def accepts(api: Any) -> bool:
        """Whether calls to ``api`` can go in a batch (an OpenAI-compatible server's); the
        others (a local model, an HTTP target) are answered online as usual."""
        return isinstance(api, OpenAIChatAPI)

    def attach(self, model: Model) -> None:
        """A model in batch mode: its prices and accounting pay for its batches' answers."""
        self.models[model.name] = model

    register = attach  # the name before the transport seam

    async def send(self, api: Any, call: Call) -> RawResponse:
        model = self.models[call.model]
        return self.answer(model, call.key, call.messages, call.config, call.schema, call.tag)

    def close(self) -> None:
        pass

    def answer(
        self,
        model: Model,
        key: str,
        messages: list[Message],
        config: GenerateConfig,
        schema: dict[str, Any] | None,
        tag: str | None,
    ) -> RawResponse:
        """The answer to this call if a batch brought it, else queue the request and raise
        Deferred. An error answer raises what the same answer online would."""
        api = model.api
        assert isinstance(api, OpenAIChatAPI)
        req = self.tables.request(key)
        if req is None:
            body = api.request_body(messages, config, schema)
            self.tables.queue(key, custom_id(tag, key), model.name, api.endpoint, body)
            raise Deferred(key)
        if req.state != ANSWERED:
            if req.state == QUEUED and req.tries >= MAX_TRIES:
                raise ProviderError(
                    f"{model.name}: no answer after {req.tries} batches (expired or failed); "
                    "re-run to ask again"
                )
            raise Deferred(key)
        text = req.result or ""
        if req.status == MALFORMED:
            raise ProviderError(f"{model.name}: the batch's answer is unusable ({text[:300]})")
        if req.status == 200:
            raw = api.parse_answer(200, text)
            raw.call_id = req.call_id
            return raw
        if schema is not None and api.mode != "prompt" and format_rejected(req.status or 0, text):
            # the server rejected our response_format: the next batch asks in the next mode
            api.mode = MODES[MODES.index(api.mode) + 1]
            self.tables.requeue(key, api.request_body(messages, config, schema))
            raise Deferred(key)
        raise status_error(req.status or 400, text, f"{api.base_url} (batch)")

    # -- between rounds of jobs ---------------------------------------------------------------
    def queued(self) -> int:
        return self.tables.counts().get(QUEUED, 0)

    async def flush(self) -> None:
        """Submit what is queued, one batch per endpoint (split at OpenAI's limits), and wait
        for every open batch; their answers are stored when this returns."""
        for endpoint, model_name, _ in self.tables.queued_endpoints():
            model = self._model(model_name)
            requests = self.tables.queued(endpoint)
            if self.budget is not None:
                room = self.budget.room()  # raises when a cap is reached
                if room is not None:
                    requests = requests[:room]
            for chunk in _chunks(requests):
                await self._submit(model, endpoint, chunk)
        await self.wait()

    async def resume(self) -> None:
        """Before the jobs run: store the answers of the file to import, finish the batches
        an earlier invocation submitted."""
        if self.import_from is not None and self.imported is None:
            self.imported = self.import_file(self.import_from)
        await self.wait()

    async def wait(self) -> None:
        """Poll every open batch (with backoff) until each has ended, and import it."""
        if self.export_to is None:
            # exported for vllm run-batch but never imported: ask through the API instead
            for b in self.tables.open():
                if b.id.startswith(EXPORT):
                    self.tables.close(b.id)
        delay = self.poll
        while batches := self._open_api_batches():
            for b in batches:
                model = self._model(b.model)
                client = _BatchClient(model.api)
                if b.state == CREATING:
                    await self._adopt(client, b.id, b.submission)
                    continue
                info = await client.get(b.id)
                self.tables.set_info(b.id, info)
                counts = info.get("request_counts") or {}
                self.say(
                    f"batch {b.id} on {b.model}: {info.get('status')}, "
                    f"{counts.get('completed', 0)}/{counts.get('total', b.requests)} done, "
                    f"{counts.get('failed', 0)} failed"
                )
                if info.get("status") in TERMINAL:
                    await self._import_batch(client, b.id, info)
                    delay = self.poll
            if self._open_api_batches():
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, self.poll_max)

    def _open_api_batches(self) -> list[Batch]:
        return [b for b in self.tables.open() if not b.id.startswith(EXPORT)]

    def exported(self) -> int:
        """Requests exported for vllm run-batch whose answers were not imported yet."""
        return sum(b.requests for b in self.tables.open() if b.id.startswith(EXPORT))

    async def _submit(self, model: Model, endpoint: str, chunk: list[BatchRequest]) -> None:
        client = _BatchClient(model.api)
        submission = uuid.uuid4().hex
        file_id = await client.upload(b"".join(request_lines(chunk)))
        # Stored before the batch exists: a crash between its creation and this process
        # learning its id is found again by the submission id in its metadata.
        placeholder = f"{CREATING}:{submission}"
        self.tables.add(
            placeholder, submission, endpoint, model.name, [r.key for r in chunk], CREATING
        )
        batch = await client.create(file_id, submission)
        self.tables.rename(placeholder, batch["id"])
        self.submitted += 1
        self.say(f"batch {batch['id']} on {model.name}: {len(chunk)} requests submitted")

    async def _adopt(self, client: _BatchClient, placeholder: str, submission: str) -> None:
        """A batch whose creation was interrupted: take it if the server has it, else queue
        its requests again."""
        for info in await client.list():
            if (info.get("metadata") or {}).get("aart_submission") == submission:
                self.tables.rename(placeholder, info["id"])
                return
        self.tables.forget(placeholder)

    async def _import_batch(
        self, client: _BatchClient, batch_id: str, info: dict[str, Any]
    ) -> None:
        for file_id in (info.get("output_file_id"), info.get("error_file_id")):
            if file_id:
                lines = (await client.content(file_id)).splitlines()
                self.store_lines(lines, f"batch {batch_id}'s file {file_id}")
        left = self.tables.close(batch_id)
        if info.get("status") != "completed" or left:
            errors = "; ".join(
                str(e.get("message", e)) for e in ((info.get("errors") or {}).get("data") or [])
            )
            self.say(
                f"batch {batch_id} {info.get('status')}: {left} requests without an answer "
                f"go in the next batch" + (f" ({errors[:300]})" if errors else "")
            )

    # -- answers ------------------------------------------------------------------------------
    def store_lines(self, lines: Iterable[bytes | str], source: str = "the batch") -> int:
        """Store the answers of a batch output or error file (OpenAI's format, which
        ``vllm run-batch`` writes too). Each answer is paid for once, at the batch price.
        A line that is not JSON, names no request of this run, or holds an unusable answer
        (say, a negative token count) is reported (``rejected``, and a warning); an unusable
        answer to one of this run's requests fails that request's job with the reason.
        Returns how many answers were stored."""
        stored = 0
        for n, raw_line in enumerate(lines, 1):
            if not raw_line.strip():
                continue
            try:
                line = json.loads(raw_line)
            except ValueError:
                self._reject(source, n, "not JSON")
                continue
            if not isinstance(line, dict):
                self._reject(source, n, f"a JSON {type(line).__name__}, not an object")
                continue
            if self._store(line, source, n):
                stored += 1
        return stored

    def _reject(self, source: str, n: int, why: str) -> None:
        message = f"{source}, line {n}: {why}; line skipped"
        self.rejected.append(message)
        log.warning("%s", message)

    def _store(self, line: dict[str, Any], source: str = "the batch", n: int = 0) -> bool:
        req = self.tables.by_custom_id(str(line.get("custom_id")))
        if req is None:
            cid = str(line.get("custom_id"))[:60]
            self._reject(source, n, f"custom_id {cid!r} is no request of this run")
            return False
        if req.state == ANSWERED:
            return False
        response = line.get("response") or {}
        error = line.get("error") or {}
        try:
            if not isinstance(response, dict) or not isinstance(error, dict):
                raise ValueError("response and error must be objects")
            code = response.get("status_code") or 0
            if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < 600:
                raise ValueError(f"status_code {str(code)[:20]!r} is not an HTTP status")
            status = code
            body = response.get("body")
            usage = (
                parse_usage(body.get("usage"), "the batch")
                if status == 200 and isinstance(body, dict)
                else None
            )
        except (ValueError, TransientError) as e:
            # this request's answer is unusable: its job fails with the reason, paid nothing
            why = f"{source}, line {n}: {e}"
            self._reject(source, n, f"{e}; its job fails")
            self.tables.answer(req.key, MALFORMED, why, None)
            return False
        if usage is not None and isinstance(body, dict):
            choices = body.get("choices")
            choice = choices[0] if isinstance(choices, list) and choices else {}
            finish = choice.get("finish_reason") if isinstance(choice, dict) else None
            call_id = self._pay(req, usage, str(finish or "stop"))
            self.tables.answer(req.key, 200, json.dumps(body), call_id)
            return True
        text = json.dumps(body if body is not None else error)
        if error.get("code") in NOT_RUN or (
            is_retryable(status) and not format_rejected(status, text)
        ):
            return False  # not run, or worth another try: the next batch asks again
        # an answer about this request (a 400, a rejected response_format): kept for the job
        self.tables.answer(req.key, status or 400, text, None)
        return True

    def _pay(self, req: BatchRequest, usage: Usage, finish_reason: str) -> int:
        model = self.models.get(req.model)
        price = (model.price if model is not None else Price()).batch()
        cost = price.cost(usage)
        if model is not None:
            model.calls += 1
            model.usage.add(usage)
        if self.budget is not None:
            self.budget.add(usage, cost)
        return self.db.record_call(
            CallRecord(
                model=req.model,
                cache_key=req.key,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                latency=0.0,
                finish_reason=finish_reason,
                cost=cost if model is None or model.priced else None,
                tag=f"batch:{req.custom_id}",
            )
        )

    # -- vllm run-batch ---------------------------------------------------------------------
    def export(self, path: Path) -> list[tuple[Path, str, int]]:
        """Write the queued requests as batch input files (one per model, as ``vllm
        run-batch`` serves one) and mark them exported. Returns (file, model, requests)."""
        written = []
        endpoints = self.tables.queued_endpoints()
        for endpoint, model_name, _ in endpoints:
            requests = self.tables.queued(endpoint)
            out = path
            if len(endpoints) > 1:
                slug = "".join(c if c.isalnum() else "-" for c in model_name.split("/", 1)[-1])
                out = path.with_name(f"{path.stem}-{slug}{path.suffix}")
            tmp = out.with_name(out.name + ".tmp")
            with tmp.open("wb") as f:
                f.writelines(request_lines(requests))
            tmp.replace(out)
            export_id = f"{EXPORT}{out.name}:{uuid.uuid4().hex[:8]}"
            self.tables.add(
                export_id, export_id, endpoint, model_name, [r.key for r in requests], "open"
            )
            written.append((out, model_name, len(requests)))
        return written

    def import_file(self, path: Path) -> tuple[int, int]:
        """Store the answers in a ``vllm run-batch`` (or OpenAI) output file. Exported
        requests it does not answer are queued again. Returns (answers stored, requests
        queued again)."""
        with path.open("rb") as f:
            stored = self.store_lines(f, str(path))
        left = 0
        for b in self.tables.open():
            if b.id.startswith(EXPORT):
                left += self.tables.close(b.id)
        return stored, left

    def _model(self, name: str) -> Model:
        model = self.models.get(name)
        if model is None:
            raise UsageError(
                f"this run has batch requests for {name}, which this command does not use; "
                f"run it with --model {name} to finish them"
            )
        return model


def _chunks(requests: list[BatchRequest]) -> Iterator[list[BatchRequest]]:
    chunk: list[BatchRequest] = []
    size = 0
    for r in requests:
        n = len(json.dumps(r.body)) + 200
        if chunk and (len(chunk) >= MAX_REQUESTS or size + n > MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(r)
        size += n
    if chunk:
        yield chunk


class _BatchClient:
    """The file and batch endpoints of an OpenAI-compatible server, with the model's
    connection and key (which goes to the same host as its chat requests, no other)."""

    def __init__(self, api: Any) -> None:
        assert isinstance(api, OpenAIChatAPI)
        self.api = api
        self.base = api.base_url

    async def _request(self, method: str, path: str, **kw: Any) -> bytes:
        for attempt in range(self.api.options.max_retries + 1):
            try:
                async with self.api._http().request(method, self.base + path, **kw) as resp:
                    data = await resp.read()
                    if resp.status < 400:
                        return data
                    err = status_error(
                        resp.status,
                        data.decode("utf-8", "replace"),
                        f"{self.base}{path}",
                        retry_after=resp.headers.get("retry-after"),
                        auth_hint=self.api.withheld or f"check {self.api.options.api_key_env}",
                        not_found_hint="this server offers no batch API (/v1/files, "
                        "/v1/batches); run without --batch, or use `aart batch export` for "
                        "vllm run-batch",
                    )
            except TimeoutError as e:
                err = TransientError(f"no answer from {self.base}{path}")
                err.__cause__ = e
            except aiohttp.ClientError as e:
                err = TransientError(f"cannot reach {self.base}{path} ({type(e).__name__})")
                err.__cause__ = e
            if not isinstance(err, TransientError) or attempt == self.api.options.max_retries:
                raise EndpointDown(
                    f"{err}; the batches submitted so far are stored: re-run the same command "
                    "to pick them up"
                ) from err
            await asyncio.sleep(err.retry_after or min(30.0, 0.5 * 2**attempt))
        raise AssertionError("unreachable")

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
