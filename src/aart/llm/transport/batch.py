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

The work between rounds (flush, wait, resume, export, import) lives here, not in the job
system: it is the batch API's life cycle, and needs only the model layer's pieces (the
provider's batch client, the :class:`~aart.llm.storage.BatchStore` protocol and
:meth:`Model.pay <aart.llm.model.Model.pay>`). The job runner (aart.jobs.runner) keeps the
loop of rounds and sees this class through its ``Rounds`` protocol.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import Deferred, ProviderError, TransientError, UsageError
from ..limits import Budget
from ..providers.openai_batch import read_result, request_lines
from ..storage import ANSWERED, CREATING, QUEUED, Batch, BatchRequest, BatchStore, RunStore
from ..types import Call, RawResponse

if TYPE_CHECKING:
    from ..model import Model
    from ..providers.base import BatchAPI, ModelAPI
    from ..storage import CallStore

#: OpenAI's limits per batch: 50,000 requests and a 200 MB input file
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1024 * 1024
#: batches a request may go through without an answer (expired, cancelled, failed) before
#: its job fails
MAX_TRIES = 3
TERMINAL = ("completed", "failed", "expired", "cancelled")
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
    #: the transport :meth:`start` made last, for the caller's report
    made: BatchTransport | None = None

    def start(self, store: CallStore | None, budget: Budget | None) -> BatchTransport:
        """The batch transport of a run: its requests and answers live in ``store`` (a
        run's ``run.db``, so they survive a crash)."""
        batches = getattr(store, "batches", None)
        if batches is None:
            raise UsageError("batch mode needs a run directory to keep its requests in")
        self.made = BatchTransport(
            batches(),
            budget=budget,
            poll=self.poll,
            poll_max=self.poll_max,
            progress=lambda msg: log.info("%s", msg),
            export_to=self.export_to,
            import_from=self.import_from,
        )
        return self.made

    def queue(self, store: RunStore, budget: Budget | None) -> BatchTransport:
        """The name before the transport seam."""
        return self.start(store, budget)


def custom_id(tag: str | None, key: str) -> str:
    """The job (``tag``) the request belongs to, and which of its calls (the cache key)."""
    return f"{tag[:48]}#{key[:16]}" if tag else key[:32]


class BatchTransport:
    """The run's batch requests and answers, shared by every model built in batch mode. A
    model's call is answered if a batch brought its answer, else queued (:class:`Deferred`);
    between rounds of jobs, :meth:`flush` submits what is queued and waits, :meth:`export`
    writes it for ``vllm run-batch`` instead (the job runner's loop, aart.jobs.runner)."""

    online = False

    def __init__(
        self,
        store: BatchStore,
        *,
        budget: Budget | None = None,
        poll: float = 5.0,
        poll_max: float = 60.0,
        progress: Callable[[str], None] | None = None,
        export_to: Path | None = None,
        import_from: Path | None = None,
    ) -> None:
        #: write the queued requests here for `vllm run-batch` instead of submitting them
        self.export_to = export_to
        self.import_from = import_from
        #: (answers stored, exported requests left unanswered) by the import
        self.imported: tuple[int, int] | None = None
        self.tables = store
        self.budget = budget
        self.poll, self.poll_max = poll, poll_max
        self.say = progress or (lambda _msg: None)
        #: the models in batch mode, by name (for prices, accounting and their endpoint)
        self.models: dict[str, Model] = {}
        #: batches submitted by this invocation
        self.submitted = 0
        #: result lines not stored, and why (foreign, malformed, unusable answers)
        self.rejected: list[str] = []

    # -- what a model call sees (the Transport protocol) --------------------------------------
    def accepts(self, api: ModelAPI) -> bool:
        """Whether calls to ``api`` can go in a batch (a server with a batch API); the
        others (a local model, an HTTP target) are answered online as usual."""
        hook = getattr(api, "batch_api", None)  # a ModelAPI's; duck-typed APIs have none
        return hook is not None and hook() is not None

    def attach(self, model: Model) -> None:
        """A model in batch mode: its prices and accounting pay for its batches' answers."""
        self.models[model.name] = model

    register = attach  # the name before the transport seam

    async def send(self, api: ModelAPI, call: Call) -> RawResponse:
        return self.answer(api, call)

    def close(self) -> None:
        pass

    def answer(self, api: ModelAPI, call: Call) -> RawResponse:
        """The answer to this call if a batch brought it (paid for already), else queue the
        request and raise Deferred. An error answer raises what the same answer online
        would."""
        wire = _batch_api(api)
        key = call.key
        req = self.tables.request(key)
        if req is None:
            body = wire.request_body(call.messages, call.config, call.schema)
            self.tables.queue(key, custom_id(call.tag, key), call.model, api.endpoint, body)
            raise Deferred(key)
        if req.state != ANSWERED:
            if req.state == QUEUED and req.tries >= MAX_TRIES:
                raise ProviderError(
                    f"{call.model}: no answer after {req.tries} batches (expired or failed); "
                    "re-run to ask again"
                )
            raise Deferred(key)
        text = req.result or ""
        if req.status == MALFORMED:
            raise ProviderError(f"{call.model}: the batch's answer is unusable ({text[:300]})")
        if req.status == 200:
            raw = wire.parse_answer(200, text)
            raw.call_id = req.call_id
            return raw
        if wire.on_format_rejected(req.status or 0, text, call.schema):
            # the server rejected our response_format: the next batch asks in the next mode
            self.tables.requeue(key, wire.request_body(call.messages, call.config, call.schema))
            raise Deferred(key)
        raise wire.answer_error(req.status or 400, text)

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
                client = _batch_api(self._model(b.model).api)
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
        client = _batch_api(model.api)
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

    async def _adopt(self, client: BatchAPI, placeholder: str, submission: str) -> None:
        """A batch whose creation was interrupted: take it if the server has it, else queue
        its requests again."""
        for info in await client.list():
            if (info.get("metadata") or {}).get("aart_submission") == submission:
                self.tables.rename(placeholder, info["id"])
                return
        self.tables.forget(placeholder)

    async def _import_batch(self, client: BatchAPI, batch_id: str, info: dict[str, Any]) -> None:
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
        try:
            result = read_result(line)
        except (ValueError, TransientError) as e:
            # this request's answer is unusable: its job fails with the reason, paid nothing
            why = f"{source}, line {n}: {e}"
            self._reject(source, n, f"{e}; its job fails")
            self.tables.answer(req.key, MALFORMED, why, None)
            return False
        if result.usage is not None:
            model = self.models.get(req.model)
            if model is None:  # paid at its model's batch price, which this command lacks
                self._reject(
                    source,
                    n,
                    f"an answer for {req.model}, which this command does not use (run it "
                    f"with --model {req.model} to import it)",
                )
                return False
            paid = RawResponse("", result.usage, result.finish_reason)
            call_id = model.pay(
                req.key, paid, 0.0, None, f"batch:{req.custom_id}", None, price=model.price.batch()
            )
            self.tables.answer(req.key, 200, result.text, call_id)
            return True
        if result.again:
            return False  # not run, or worth another try: the next batch asks again
        # an answer about this request (a 400, a rejected response_format): kept for the job
        self.tables.answer(req.key, result.status or 400, result.text, None)
        return True

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
        waiting = [b for b in self.tables.open() if b.id.startswith(EXPORT)]
        if not stored and waiting:
            # an empty, truncated or unrelated file: the requests stay waiting for it
            raise UsageError(
                f"{path}: no answer to a waiting request in it (empty, cut short, the output "
                "of other requests, or answers of a model this command does not use, see the "
                f"notes above); nothing imported, {sum(b.requests for b in waiting)} requests "
                "still wait: give the output file of `vllm run-batch` for them"
            )
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


def batch_of(transport: Any) -> BatchTransport | None:
    """The batch transport a factory started (``factory.transport``), if it did: what the
    job runner flushes between rounds."""
    return transport if isinstance(transport, BatchTransport) else None


def _batch_api(api: ModelAPI) -> BatchAPI:
    wire = api.batch_api()
    assert wire is not None, "a model in batch mode has a batch API (see accepts)"
    return wire


def BatchQueue(db: RunStore, **settings: Any) -> BatchTransport:  # noqa: N802
    """The constructor before the transport seam: the batch transport of a ``RunDB``."""
    return BatchTransport(db.batches(), **settings)
