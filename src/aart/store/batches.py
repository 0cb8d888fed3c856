"""The batch tables of ``run.db``: requests waiting for a batch, the batches submitted (or
exported for ``vllm run-batch``), and the answers they brought back. A request is named by
the cache key of its call, so a job asking again finds its answer; every state change is
committed before the next network step, so a crash at any point resumes without paying for a
request twice."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from ..llm.storage import (
    ANSWERED,
    CREATING,
    IMPORTED,
    OPEN,
    QUEUED,
    SUBMITTED,
    Batch,
    BatchRequest,
)
from .db import RunDB

__all__ = [
    "ANSWERED",
    "CREATING",
    "IMPORTED",
    "OPEN",
    "QUEUED",
    "SUBMITTED",
    "Batch",
    "BatchRequest",
    "BatchTables",
]

_COLUMNS = "key, custom_id, model, endpoint, body, state, batch_id, tries, status, result, call_id"


def _request(row: tuple[Any, ...]) -> BatchRequest:
    values = list(row)
    values[4] = json.loads(values[4])
    return BatchRequest(*values)


def _batch(row: tuple[Any, ...]) -> Batch:
    return Batch.from_row(row)


class BatchTables:
    """The batch tables of ``run.db``: implements :class:`aart.llm.storage.BatchStore`."""

    def __init__(self, db: RunDB) -> None:
        self.db = db
        self.conn = db.conn

    # -- requests --------------------------------------------------------------------------
    def request(self, key: str) -> BatchRequest | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM batch_requests WHERE key=?", (key,)
        ).fetchone()
        return _request(row) if row else None

    def queue(self, key: str, custom_id: str, model: str, endpoint: str, body: Any) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO batch_requests (key, custom_id, model, endpoint, body)"
            " VALUES (?,?,?,?,?)",
            (key, custom_id, model, endpoint, json.dumps(body)),
        )

    def requeue(self, key: str, body: Any | None = None) -> None:
        """Ask again in the next batch (a retryable answer, or another structured-output mode);
        ``tries`` counts the batches that gave no usable answer."""
        self.conn.execute(
            "UPDATE batch_requests SET state=?, batch_id=NULL, status=NULL, result=NULL,"
            " call_id=NULL, tries=tries+1, body=COALESCE(?, body) WHERE key=?",
            (QUEUED, json.dumps(body) if body is not None else None, key),
        )

    def queued(self, endpoint: str | None = None) -> list[BatchRequest]:
        sql = f"SELECT {_COLUMNS} FROM batch_requests WHERE state=?"
        args: tuple[Any, ...] = (QUEUED,)
        if endpoint is not None:
            sql += " AND endpoint=?"
            args += (endpoint,)
        return [_request(r) for r in self.conn.execute(sql + " ORDER BY rowid", args)]

    def queued_endpoints(self) -> list[tuple[str, str, int]]:
        """(endpoint, model, requests) with requests waiting for a batch."""
        return list(
            self.conn.execute(
                "SELECT endpoint, MIN(model), COUNT(*) FROM batch_requests WHERE state=?"
                " GROUP BY endpoint ORDER BY endpoint",
                (QUEUED,),
            )
        )

    def in_batch(self, batch_id: str) -> dict[str, BatchRequest]:
        """The requests of a batch still waiting for their answer, by custom_id."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM batch_requests WHERE batch_id=? AND state=?",
            (batch_id, SUBMITTED),
        )
        return {r.custom_id: r for r in map(_request, rows)}

    def by_custom_id(self, custom_id: str) -> BatchRequest | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM batch_requests WHERE custom_id=?", (custom_id,)
        ).fetchone()
        return _request(row) if row else None

    def answer(self, key: str, status: int, result: str, call_id: int | None) -> None:
        self.conn.execute(
            "UPDATE batch_requests SET state=?, status=?, result=?, call_id=? WHERE key=?",
            (ANSWERED, status, result, call_id, key),
        )

    def counts(self) -> dict[str, int]:
        rows = self.conn.execute("SELECT state, COUNT(*) FROM batch_requests GROUP BY state")
        return {s: n for s, n in rows}

    # -- batches ---------------------------------------------------------------------------
    def add(
        self,
        batch_id: str,
        submission: str,
        endpoint: str,
        model: str,
        keys: Iterable[str],
        state: str,
    ) -> None:
        """Record a batch and put its requests in it, in one transaction."""
        keys = list(keys)
        with self.db.transaction():
            self.conn.execute(
                "INSERT INTO batches (id, submission, endpoint, model, state, requests,"
                " created_at) VALUES (?,?,?,?,?,?,?)",
                (batch_id, submission, endpoint, model, state, len(keys), time.time()),
            )
            self.conn.executemany(
                "UPDATE batch_requests SET state=?, batch_id=? WHERE key=?",
                ((SUBMITTED, batch_id, k) for k in keys),
            )

    def rename(self, old: str, new: str) -> None:
        """A batch being created got its id from the server."""
        with self.db.transaction():
            self.conn.execute("UPDATE batches SET id=?, state=? WHERE id=?", (new, OPEN, old))
            self.conn.execute("UPDATE batch_requests SET batch_id=? WHERE batch_id=?", (new, old))

    def forget(self, batch_id: str) -> None:
        """A batch that was never created: its requests wait for the next one."""
        with self.db.transaction():
            self.conn.execute("DELETE FROM batches WHERE id=?", (batch_id,))
            self.conn.execute(
                "UPDATE batch_requests SET state=?, batch_id=NULL WHERE batch_id=?",
                (QUEUED, batch_id),
            )

    def set_info(self, batch_id: str, info: dict[str, Any]) -> None:
        self.conn.execute("UPDATE batches SET info=? WHERE id=?", (json.dumps(info), batch_id))

    def close(self, batch_id: str) -> int:
        """The batch's answers are stored: what it left unanswered is queued again. Returns
        how many requests that is."""
        with self.db.transaction():
            cur = self.conn.execute(
                "UPDATE batch_requests SET state=?, batch_id=NULL, tries=tries+1"
                " WHERE batch_id=? AND state=?",
                (QUEUED, batch_id, SUBMITTED),
            )
            self.conn.execute("UPDATE batches SET state=? WHERE id=?", (IMPORTED, batch_id))
            return cur.rowcount

    def open(self) -> list[Batch]:
        """Batches submitted (or being created) whose answers are not stored yet."""
        rows = self.conn.execute(
            "SELECT id, submission, endpoint, model, state, requests, created_at, info"
            " FROM batches WHERE state IN (?, ?) ORDER BY created_at",
            (CREATING, OPEN),
        )
        return [_batch(r) for r in rows]

    def all(self) -> list[Batch]:
        rows = self.conn.execute(
            "SELECT id, submission, endpoint, model, state, requests, created_at, info"
            " FROM batches ORDER BY created_at"
        )
        return [_batch(r) for r in rows]
