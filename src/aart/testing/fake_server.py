"""A fake OpenAI-compatible chat-completions server speaking real HTTP on 127.0.0.1.

It answers ``POST /v1/chat/completions`` with a schema-valid JSON answer (when the request
carries a JSON schema) or a short text, and can inject faults from a script consumed one
request at a time:

    {"status": 429, "retry_after": 1}   an error status, with an optional Retry-After (and an
                                        optional "body" to answer with)
    {"delay": 2.5}                      answer late (the fixed ``latency`` applies to all)
    {"drop": true}                      close the connection without answering
    {"content": "..."}                  answer with this text (truncated JSON, fences, <think>,
                                        refusals ...)
    {"stall": 3}                        (streaming) pause this long after the first chunk
    {"status": 307, "location": URL}    a redirect (any status, with a Location header)
    {"cut": true}                       (streaming) drop the connection after the first
                                        chunk, mid-answer, as llama-cpp-python's server
                                        does when another request interrupts it
    {"events": ["[1, 2]", ...]}         (streaming) send these data lines first, verbatim
    {"endless": true}                   (streaming) never finish the answer
    {"tool_calls": [{"name": "send_email", "arguments": {...}}], "content": "..."}
                                        answer with these tool calls (an agent acting), or,
                                        when the conversation holds a call of one of these
                                        tools already, with ``content`` alone (the agent
                                        that acted reports); with ``"repeat": true``, the
                                        calls every time (an agent that never stops)

A request with ``"stream": true`` gets server-sent events: the headers at once, then the answer
a few characters a chunk, and a usage chunk when ``stream_options.include_usage`` asks for one
(unless ``stream_usage`` is False, as with llama-cpp-python's server). ``slots`` bounds the
completions computed at once: ``slots=1`` queues the others, as llama-cpp-python's server
does, so latency grows with load; ``interrupt = True`` also cuts a stream short when another
request waits, as that server does by default. ``ran`` counts the completions computed, including those
whose client had gone.

``tokenizer = True`` offers llama-cpp-python's ``POST /extras/tokenize/count`` (a token a
``chars_per_token`` characters); ``tokenized`` keeps the texts it counted.

``on_text(text, action)`` answers every request that mentions ``text`` with ``action`` (a fault
tied to one job's content, whatever the order of calls).

Set ``reject_formats`` (e.g. {"json_schema"}) to answer ``reject_status`` (400) to those
response formats, like a server without structured output; llama-cpp-python's server answers
json_schema with a 500 validation error, which ``reject_status = 500`` imitates.

The OpenAI file and batch endpoints are there too: ``POST /v1/files`` (multipart upload),
``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}`` and
``GET /v1/batches``. A batch answers each line as the chat endpoint would (rules, script,
rejected formats), after ``batch_delay`` seconds; ``batch_expire_after = k`` lets the next
batch answer only k requests and end "expired", the rest in its error file. ``batches`` keeps
every batch created.

A test gate, for tests that must catch a process part-way (a second process joining a run, a
kill mid-run) without depending on timing: ``hold(after=n)`` lets n more chat requests through,
then holds the others (and keeps every batch in progress) until ``release()``; ``held`` counts
the chat requests waiting at the gate (they are in ``requests`` already).

``ignore_cells = True`` (``--ignore-cells`` standalone) writes generation answers that embody
no cell: a generator whose every item is unfaithful, so a run stops before its top-ups.

Run standalone (for benchmarks): ``python -m aart.testing.fake_server --port 8765 --latency 0.2``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email.parser
import email.policy
import json
import re
import threading
import time
from collections import deque
from typing import Any

from ..llm.providers.fake import synthesize


class FakeOpenAIServer:
    def __init__(
        self, latency: float = 0.0, host: str = "127.0.0.1", port: int = 0, slots: int = 1024
    ) -> None:
        self.latency = latency
        #: completions computed at once; 1 imitates llama-cpp-python's server, which queues
        self.slots = slots
        self._slots_sem: asyncio.Semaphore | None = None
        self.host, self.port = host, port
        self.script: deque[dict[str, Any]] = deque()
        #: (text, action): a request whose messages contain ``text`` gets ``action``, always
        self.rules: list[tuple[str, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.served = 0
        #: completions the server computed, whether or not the client was still there
        self.ran = 0
        #: whether a stream ends with a usage chunk when asked (llama-cpp-python's does not)
        self.stream_usage = True
        #: cut a stream short when another request waits, as llama-cpp-python's server does
        #: (its interrupt_requests setting, on by default)
        self.interrupt = False
        #: seconds between streamed chunks (generation time)
        self.token_delay = 0.0
        self._waiting = 0
        #: llama-cpp-python's tokenizer endpoint, and the texts it counted
        self.tokenizer = False
        self.chars_per_token = 3
        self.tokenized: list[str] = []
        #: write generation answers that ignore their cells (every "Query N:" line read as
        #: a generic topic): a generator whose prompts embody no cell, for trying the early
        #: stop before the top-ups and --min-fill
        self.ignore_cells = False
        self.reject_formats: set[str] = set()
        self.reject_status = 400
        #: the file and batch endpoints
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_delay = 0.05
        self.batch_expire_after: int | None = None
        #: chat requests answered inside batches
        self.batch_requests: list[dict[str, Any]] = []
        #: chat requests being answered now, and the most at once
        self.in_flight = 0
        self.peak_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def push(self, *actions: dict[str, Any]) -> None:
        self.script.extend(actions)

    def on_text(self, text: str, action: dict[str, Any]) -> None:
        """Answer every request that mentions ``text`` with ``action`` (say, a 400 for the
        jobs of one value), before the script; ``rules.clear()`` removes them."""
        self.rules.append((text, action))

    # -- HTTP ---------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                keep = await self._respond(lines[0], headers, body, writer)
                if not keep:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may be stopping
                writer.close()

    async def _respond(
        self, request_line: str, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        method, path, _ = request_line.split(" ", 2)
        if method == "GET" and path.endswith("/models"):
            self._send(writer, 200, {"data": [{"id": "fake", "object": "model"}]})
            return True
        if method == "POST" and path == "/extras/tokenize/count" and self.tokenizer:
            text = str(json.loads(body or b"{}").get("input", ""))
            self.tokenized.append(text)
            self._send(writer, 200, {"count": len(text) // self.chars_per_token + 1})
            return True
        if "/files" in path or "/batches" in path:
            self._batch_api(method, path, headers, body, writer)
            return True
        if not (method == "POST" and path.endswith("/chat/completions")):
            self._send(writer, 404, {"error": {"message": f"no route {path}"}})
            return True
        req = json.loads(body or b"{}")
        self.requests.append(req)
        self.headers.append(headers)
        await self._pass_gate()
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._chat(req, writer)
        finally:
            self.in_flight -= 1

    async def _chat(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        fmt = (req.get("response_format") or {}).get("type")
        if fmt and fmt in self.reject_formats:
            # Like a server without structured output: rejected before any scripted action.
            message = (
                f"1 validation error: body.response_format.type: Input should be 'text' or "
                f"'json_object', got {fmt!r}"
                if self.reject_status == 500
                else f"response_format {fmt} unsupported"
            )
            self._send(writer, self.reject_status, {"error": {"message": message}})
            return True
        action = self._action(req)
        if action.get("drop"):
            await asyncio.sleep(self.latency + float(action.get("delay", 0)))
            return False
        if "status" in action:
            await asyncio.sleep(self.latency + float(action.get("delay", 0)))
            extra = {}
            if action.get("retry_after") is not None:
                extra["Retry-After"] = str(action["retry_after"])
            if action.get("location"):
                extra["Location"] = str(action["location"])
            body_out = action.get("body") or {"error": {"message": "injected"}}
            self._send(writer, action["status"], body_out, extra)
            return True
        content = action.get("content")
        if content is None:
            content = self._answer(_off_cell(req) if self.ignore_cells else req)
        if (
            action.get("tool_calls")
            and not action.get("repeat")
            and self._called(req, action["tool_calls"])
        ):
            action = {k: v for k, v in action.items() if k != "tool_calls"}
        usage = self._usage(req, content)
        if req.get("stream"):
            # the stream's headers go out at once, as real servers send them; the tokens come
            # when a slot is free (queueing) and the latency has passed
            self._start_stream(writer)
            await writer.drain()
            self._waiting += 1
            async with self._slots:
                self._waiting -= 1
                await asyncio.sleep(self.latency + float(action.get("delay", 0)))
                self.served += 1
                self.ran += 1
                alive = await self._stream(writer, req, content, usage, action)
            return alive
        async with self._slots:
            await asyncio.sleep(self.latency + float(action.get("delay", 0)))
            self.served += 1
            self.ran += 1
        self._send(writer, 200, self._completion(req, content, usage, action))
        return True

    def _action(self, req: dict[str, Any]) -> dict[str, Any]:
        """What to do with a chat request: the first rule its messages match, else the next
        scripted action, else a plain answer ({})."""
        said = " ".join(str(m.get("content") or "") for m in req.get("messages", []))
        ruled = [a for t, a in self.rules if t in said]
        return ruled[0] if ruled else self.script.popleft() if self.script else {}

    @staticmethod
    def _called(req: dict[str, Any], calls: list[dict[str, Any]]) -> bool:
        """Whether the conversation already holds a call of one of these tools (an agent
        acts once, then reports)."""
        names = {c.get("name") for c in calls}
        for m in req.get("messages") or []:
            for c in m.get("tool_calls") or []:
                if (c.get("function") or {}).get("name") in names:
                    return True
        return False

    @staticmethod
    def _usage(req: dict[str, Any], content: str) -> dict[str, int]:
        prompt_chars = sum(len(m.get("content") or "") for m in req.get("messages", []))
        return {"prompt_tokens": prompt_chars // 4 + 1, "completion_tokens": len(content) // 4 + 1}

    # -- files and batches --------------------------------------------------------------------
    def _batch_api(
        self, method: str, path: str, headers: dict[str, str], body: bytes, writer: Any
    ) -> None:
        parts = path.split("?")[0].rstrip("/").split("/")
        if method == "POST" and parts[-1] == "files":
            fields = _multipart(headers.get("content-type", ""), body)
            if "file" not in fields:
                self._send(writer, 400, {"error": {"message": "no file field"}})
                return
            fid = f"file-{len(self.files) + 1}"
            self.files[fid] = fields["file"]
            self._send(
                writer,
                200,
                {"id": fid, "object": "file", "bytes": len(fields["file"]), "purpose": "batch"},
            )
        elif method == "GET" and parts[-1] == "content" and parts[-2] in self.files:
            self._send_bytes(writer, self.files[parts[-2]])
        elif method == "POST" and parts[-1] == "batches":
            req = json.loads(body or b"{}")
            if req.get("input_file_id") not in self.files:
                self._send(writer, 400, {"error": {"message": "unknown input_file_id"}})
                return
            bid = f"batch_{len(self.batches) + 1}"
            lines = self.files[req["input_file_id"]].splitlines()
            batch = {
                "id": bid,
                "object": "batch",
                "endpoint": req.get("endpoint"),
                "input_file_id": req["input_file_id"],
                "completion_window": req.get("completion_window"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": req.get("metadata") or {},
            }
            self.batches[bid] = batch
            asyncio.get_running_loop().create_task(self._run_batch(batch, lines))
            self._send(writer, 200, batch)
        elif method == "GET" and parts[-1] == "batches":
            self._send(writer, 200, {"object": "list", "data": list(self.batches.values())})
        elif method == "GET" and parts[-1] in self.batches:
            self._send(writer, 200, self.batches[parts[-1]])
        else:
            self._send(writer, 404, {"error": {"message": f"no route {path}"}})

    async def _run_batch(self, batch: dict[str, Any], lines: list[bytes]) -> None:
        await asyncio.sleep(self.batch_delay)
        batch["status"] = "in_progress"
        gate = self._gate
        if gate is not None:
            await gate.wait()  # the test gate keeps the batch in progress
        await asyncio.sleep(self.batch_delay)
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        counts = batch["request_counts"]
        expire_after, self.batch_expire_after = self.batch_expire_after, None
        for n, raw in enumerate(lines):
            line = json.loads(raw)
            if expire_after is not None and n >= expire_after:
                error = {"code": "batch_expired", "message": "not run before the batch expired"}
                errors.append({"custom_id": line["custom_id"], "response": None, "error": error})
                continue
            status, payload = self._batch_answer(line["body"])
            result = {
                "id": f"batch_req_{n}",
                "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{n}", "body": payload},
                "error": None,
            }
            (out if status == 200 else errors).append(result)
            counts["completed" if status == 200 else "failed"] += 1
        for name, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                fid = f"file-{len(self.files) + 1}"
                self.files[fid] = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
                batch[name] = fid
        batch["status"] = "expired" if expire_after is not None else "completed"

    def _batch_answer(self, req: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, body) for one chat request of a batch."""
        self.batch_requests.append(req)
        fmt = (req.get("response_format") or {}).get("type")
        if fmt and fmt in self.reject_formats:
            return 400, {"error": {"message": f"response_format {fmt} unsupported"}}
        action = self._action(req)
        if "status" in action:
            return int(action["status"]), action.get("body") or {"error": {"message": "injected"}}
        content = action.get("content")
        if content is None:
            content = self._answer(_off_cell(req) if self.ignore_cells else req)
        self.served += 1
        self.ran += 1
        return 200, self._completion(req, content, self._usage(req, content), action)

    @staticmethod
    def _send_bytes(writer: Any, data: bytes) -> None:
        head = [
            "HTTP/1.1 200 OK",
            "Content-Type: application/octet-stream",
            f"Content-Length: {len(data)}",
            "Connection: keep-alive",
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)

    def _completion(
        self, req: dict[str, Any], content: str, usage: dict[str, int], action: dict[str, Any]
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = action.get("finish_reason", "stop")
        if action.get("tool_calls"):
            message["content"] = action.get("content")
            message["tool_calls"] = [
                {
                    "id": f"call_{self.served}_{i}",
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": c["arguments"]
                        if isinstance(c.get("arguments"), str)
                        else json.dumps(c.get("arguments") or {}),
                    },
                }
                for i, c in enumerate(action["tool_calls"])
            ]
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{self.served}",
            "object": "chat.completion",
            "model": req.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }

    @property
    def _slots(self) -> asyncio.Semaphore:
        if self._slots_sem is None:
            self._slots_sem = asyncio.Semaphore(self.slots)
        return self._slots_sem

    @staticmethod
    def _start_stream(writer: asyncio.StreamWriter) -> None:
        head = [
            "HTTP/1.1 200 OK",
            "Content-Type: text/event-stream",
            "Transfer-Encoding: chunked",
            "Connection: keep-alive",
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())

    async def _stream(
        self,
        writer: asyncio.StreamWriter,
        req: dict[str, Any],
        content: str,
        usage: dict[str, int],
        action: dict[str, Any],
    ) -> bool:
        """Server-sent events, a few characters a chunk; ``stall`` seconds of silence after
        the first chunk when the action asks for it. False when the client went away."""

        def event(payload: Any) -> None:
            data = f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"
            raw = data.encode()
            writer.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")

        pieces = [content[i : i + 8] for i in range(0, len(content), 8)] or [""]
        if action.get("endless"):
            pieces = _endless(pieces[0] or "x")  # type: ignore[assignment]
        try:
            for raw_event in action.get("events") or []:
                event(str(raw_event))
            for i, piece in enumerate(pieces):
                if action.get("cut") and i == 1:
                    writer.transport.abort()  # no end of the stream, no end of the chunks
                    return False
                delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
                last = i == len(pieces) - 1
                event(
                    {
                        "id": f"chatcmpl-{self.served}",
                        "object": "chat.completion.chunk",
                        "choices": [
                            {
                                "index": 0,
                                "delta": delta,
                                "finish_reason": action.get("finish_reason", "stop")
                                if last
                                else None,
                            }
                        ],
                    }
                )
                await writer.drain()
                if self.token_delay or action.get("endless"):
                    await asyncio.sleep(self.token_delay)
                if i == 0 and action.get("stall"):
                    await asyncio.sleep(float(action["stall"]))
                if self.interrupt and self._waiting and not last:
                    break  # [DONE] before the answer is finished
            if (req.get("stream_options") or {}).get("include_usage") and self.stream_usage:
                event({"object": "chat.completion.chunk", "choices": [], "usage": usage})
            event("[DONE]")
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            return False
        return True

    @staticmethod
    def _answer(req: dict[str, Any]) -> str:
        rf = req.get("response_format") or {}
        schema = (rf.get("json_schema") or {}).get("schema")
        msgs = req.get("messages", [])
        seed_text = json.dumps([msgs, req.get("seed")])
        if schema:
            prompt = "\n".join(str(m.get("content", "")) for m in msgs)
            return synthesize(schema, prompt, seed_text)
        if rf.get("type") == "json_object":
            return json.dumps({"answer": "ok"})
        return "fake answer to: " + ((msgs[-1].get("content") or "")[:100] if msgs else "")

    @staticmethod
    def _send(
        writer: asyncio.StreamWriter, status: int, payload: Any, extra: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        reason = {
            200: "OK",
            400: "Bad Request",
            404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error",
            503: "Service Unavailable",
        }.get(status, "Status")
        head = [
            f"HTTP/1.1 {status} {reason}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            "Connection: keep-alive",
        ]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)

    # -- test gate: hold requests until the test releases them -----------------------------
    # Tests synchronise on this state (``held``), never on how fast a process gets somewhere.
    # Class attributes, so that the fault modes above stay untouched: an open gate is None.
    _gate: asyncio.Event | None = None
    _gate_after = 0
    #: chat requests waiting at the gate now
    held = 0

    def hold(self, after: int = 0) -> None:
        """Let ``after`` more chat requests through, then hold every later one (each is in
        ``requests`` at once, and counted in ``held`` while it waits), and keep batches in
        progress, until :meth:`release`."""
        self._gate_after = len(self.requests) + after
        self._gate = asyncio.Event()

    def release(self) -> None:
        """Open the gate: the held requests go on, later ones pass."""
        gate, self._gate = self._gate, None
        if gate is None:
            return
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(gate.set)  # the event belongs to the server's loop
        else:
            gate.set()

    async def _pass_gate(self) -> None:
        gate = self._gate
        if gate is None or len(self.requests) <= self._gate_after:
            return
        self.held += 1
        try:
            await gate.wait()
        finally:
            self.held -= 1

    # -- lifecycle ----------------------------------------------------------------------------
    async def serve(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    def start(self) -> FakeOpenAIServer:
        """Serve from a background thread; returns once the port is bound."""
        ready = threading.Event()

        def main() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        if not ready.wait(300):  # a generous bound on a loaded machine: never go on unbound
            raise RuntimeError("the fake server did not bind its port")
        return self

    async def _shutdown(self) -> None:
        if self._server:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.get_running_loop().stop()

    def stop(self) -> None:
        if self._loop:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        if self._thread:
            self._thread.join(5)
        if self._loop and not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


class _endless:  # noqa: N801 - a sequence that never ends, for {"endless": true}
    def __init__(self, piece: str) -> None:
        self.piece = piece

    def __iter__(self) -> Any:
        while True:
            yield self.piece

    def __len__(self) -> int:
        return 1 << 62


def _off_cell(req: dict[str, Any]) -> dict[str, Any]:
    """The request with every cell line of a generation prompt ("Query 1: ...") replaced by
    a generic topic, so the synthesized queries name none of the cell's values."""
    messages = [
        {**m, "content": _CELL_LINE.sub(r"\1 a generic topic", m["content"])}
        if isinstance(m.get("content"), str)
        else m
        for m in req.get("messages", [])
    ]
    return {**req, "messages": messages}


_CELL_LINE = re.compile(r"^(Query \d+:) .*$", re.M)


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if name:
            fields[str(name)] = payload if isinstance(payload, bytes) else b""
    return fields


def _cli() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--slots", type=int, default=1024, help="completions computed at once")
    ap.add_argument(
        "--ignore-cells",
        action="store_true",
        help="generation answers that embody no cell (to try the early stop and --min-fill)",
    )
    args = ap.parse_args()
    server = FakeOpenAIServer(args.latency, port=args.port, slots=args.slots)
    server.ignore_cells = args.ignore_cells

    async def main() -> None:
        await server.serve()
        print(f"listening on {server.base_url}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


if __name__ == "__main__":
    _cli()
