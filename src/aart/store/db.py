"""``run.db``: SQLite (WAL) holding jobs, LLM calls, the response cache and generated records.

Every write that finishes a job commits together with the job's records, so a process killed
at any moment (SIGKILL included) leaves either the whole job or none of it; paid responses are
cached the moment they arrive, so a re-run never pays twice for them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..llm.types import INTERRUPTED, CallRecord
from ..types import RecordKind
from .lock import DirLock, dir_lock

if TYPE_CHECKING:
    from .batches import BatchTables

# Numbered migrations: index i upgrades user_version i to i+1. Append only.
MIGRATIONS = [
    """
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY, stage TEXT NOT NULL, payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending', tries INTEGER NOT NULL DEFAULT 0,
        error TEXT, updated_at REAL
    );
    CREATE INDEX jobs_stage_status ON jobs(stage, status);
    CREATE TABLE calls (
        id INTEGER PRIMARY KEY, created_at REAL NOT NULL, model TEXT NOT NULL,
        cache_key TEXT, tag TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
        latency REAL, finish_reason TEXT, cost REAL, error TEXT, raw_text TEXT
    );
    CREATE TABLE cache (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL, created_at REAL
    );
    CREATE TABLE records (
        id TEXT PRIMARY KEY, stage TEXT NOT NULL, job_id TEXT NOT NULL, data TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX records_stage ON records(stage, job_id);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: the job's `tries` counter was written but never read
    "ALTER TABLE jobs DROP COLUMN tries;",
    # 3: human review labels: every save is a new version, nothing is overwritten
    """
    CREATE TABLE labels (
        id INTEGER PRIMARY KEY, kind TEXT NOT NULL, record_id TEXT NOT NULL,
        reviewer TEXT NOT NULL, version INTEGER NOT NULL, created_at REAL NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX labels_record ON labels(kind, record_id, reviewer);
    """,
    # 4: cooperating workers take jobs by lease (owner, expiry), renewed by a heartbeat
    """
    ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
    ALTER TABLE jobs ADD COLUMN lease_expires REAL;
    """,
    # 5: requests sent through a batch API (or exported for `vllm run-batch`), the batches,
    # and the answers they brought back (see aart.llm.batch and store.batches)
    """
    CREATE TABLE batch_requests (
        key TEXT PRIMARY KEY, custom_id TEXT NOT NULL UNIQUE, model TEXT NOT NULL,
        endpoint TEXT NOT NULL, body TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'queued',
        batch_id TEXT, tries INTEGER NOT NULL DEFAULT 0, status INTEGER, result TEXT,
        call_id INTEGER
    );
    CREATE INDEX batch_requests_state ON batch_requests(state, endpoint);
    CREATE INDEX batch_requests_batch ON batch_requests(batch_id);
    CREATE TABLE batches (
        id TEXT PRIMARY KEY, submission TEXT NOT NULL, endpoint TEXT NOT NULL,
        model TEXT NOT NULL, state TEXT NOT NULL, requests INTEGER NOT NULL,
        created_at REAL NOT NULL, info TEXT
    );
    """,
    # 6: a record's kind (aart.types.RecordKind) in its own column; it was a suffix of the
    # job's stage ("generate.refused"). Old rows keep their data: the suffix becomes the kind
    # and the stage is the job's again; a stage without one holds prompts, or attack results.
    """
    ALTER TABLE records ADD COLUMN kind TEXT NOT NULL DEFAULT 'prompt';
    UPDATE records SET kind = 'result' WHERE stage = 'attack';
    UPDATE records SET kind = substr(stage, instr(stage, '.') + 1),
        stage = substr(stage, 1, instr(stage, '.') - 1) WHERE instr(stage, '.') > 0;
    DROP INDEX records_stage;
    CREATE INDEX records_kind ON records(kind, job_id);
    """,
]


#: the cache key and error of a call sent whose answer was never recorded (in flight when
#: its process was killed)
IN_FLIGHT = "in-flight"
IN_FLIGHT_ERROR = "in flight: sent, no answer recorded (its process was killed?)"


class RunDB:
    """One connection, used from one thread (the event loop's). A writer (``lock=True``, the
    default) holds the directory's lock until :meth:`close`: a second writing process is
    refused with a clear message. Readers (``aart evaluate``) take no lock."""

    def __init__(self, path: str | Path, *, lock: bool | str | DirLock = True) -> None:
        """``lock``: True (this process alone), "shared" (a worker beside others that take
        jobs by lease), False (a reader), or a DirLock already held."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # a DirLock already held (by Run.create_or_resume) is handed over
        self.lock = lock if isinstance(lock, DirLock) else None
        if lock is True or lock == "shared":
            self.lock = dir_lock(self.path.parent, shared=lock == "shared")
            self.lock.acquire()
        #: who holds this connection's job leases
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a process crash; only power loss can drop the tail.
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA busy_timeout=10000")
        self._migrate()

    def _migrate(self) -> None:
        """Bring the schema up to date, one numbered step per transaction. The version is
        read again under the write lock, so two processes opening a new run.db at once (two
        workers) never apply a step twice."""
        for i in range(len(MIGRATIONS)):
            if self.conn.execute("PRAGMA user_version").fetchone()[0] > i:
                continue
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                if self.conn.execute("PRAGMA user_version").fetchone()[0] <= i:
                    for statement in MIGRATIONS[i].split(";"):
                        if statement.strip():
                            self.conn.execute(statement)
                    self.conn.execute(f"PRAGMA user_version={i + 1}")
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def transaction(self) -> _Tx:
        return _Tx(self.conn)

    def close(self) -> None:
        self.conn.close()
        if self.lock is not None:
            self.lock.release()

    # -- meta -------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- cache and calls (aart.llm.storage's CallStore and RunStore) -----------------------
    def batches(self) -> BatchTables:
        """This run's batch requests and batches (aart.llm.storage's BatchStore)."""
        from .batches import BatchTables  # which builds on this module

        return BatchTables(self)

    def cache_get(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT value FROM cache WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, model: str, value: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO cache VALUES (?, ?, ?, ?)",
            (key, model, json.dumps(value), time.time()),
        )

    def begin_call(self, model: str, tag: str | None) -> int:
        """A call about to be sent, recorded before it goes: a process killed while it is in
        flight leaves this row (counted as a call, its tokens unknown), so a resume counts
        the calls the server may have run. :meth:`record_call` with ``row`` completes it."""
        cur = self.conn.execute(
            "INSERT INTO calls (created_at, model, cache_key, tag, prompt_tokens,"
            " completion_tokens, latency, finish_reason, cost, error)"
            " VALUES (?,?,?,?,0,0,0,'in-flight',0,?)",
            (time.time(), model, IN_FLIGHT, tag, IN_FLIGHT_ERROR),
        )
        return int(cur.lastrowid or 0)

    def record_call(self, r: CallRecord, row: int | None = None) -> int:
        if row is not None:
            self.conn.execute(
                "UPDATE calls SET model=?, cache_key=?, tag=?, prompt_tokens=?,"
                " completion_tokens=?, latency=?, finish_reason=?, cost=?, error=?, raw_text=?"
                " WHERE id=?",
                (
                    r.model, r.cache_key, r.tag, r.prompt_tokens, r.completion_tokens, r.latency,
                    r.finish_reason, r.cost, r.error, r.raw_text, row,
                ),
            )  # fmt: skip
            return row
        cur = self.conn.execute(
            "INSERT INTO calls (created_at, model, cache_key, tag, prompt_tokens,"
            " completion_tokens, latency, finish_reason, cost, error, raw_text)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                time.time(),
                r.model,
                r.cache_key,
                r.tag,
                r.prompt_tokens,
                r.completion_tokens,
                r.latency,
                r.finish_reason,
                r.cost,
                r.error,
                r.raw_text,
            ),
        )
        return int(cur.lastrowid or 0)

    def spent_nothing(self) -> bool:
        """No call made and no job queued: the run has not really started."""
        calls = self.conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        jobs = self.conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
        return calls == 0 and jobs == 0

    def call_totals(self) -> dict[str, Any]:
        """Calls, tokens and cost. ``cost`` is None when a paid model without a price was
        called (``unpriced`` names them; ``priced_cost`` is what the priced ones cost);
        ``target_calls`` are the calls to HTTP and Python targets, which are not paid per
        token, ``local_calls`` those to the embedded model."""
        row = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0),"
            " COALESCE(SUM(cost),0),"
            " COALESCE(SUM(error IS NOT NULL AND cache_key != ? AND error != ?),0),"
            " COALESCE(SUM(model LIKE 'http/%' OR model LIKE 'python/%'),0),"
            " COALESCE(SUM(cache_key = ?),0), COALESCE(SUM(model LIKE 'local/%'),0),"
            " COALESCE(SUM(error = ?),0), COALESCE(SUM(model LIKE 'fake/%'),0)"
            " FROM calls WHERE cache_key != ''",
            (IN_FLIGHT, INTERRUPTED, IN_FLIGHT, INTERRUPTED),
        ).fetchone()
        unpriced = [
            m
            for (m,) in self.conn.execute(
                "SELECT DISTINCT model FROM calls WHERE cache_key != '' AND cost IS NULL"
                " ORDER BY model"
            )
        ]
        return {
            "calls": row[0],
            "prompt_tokens": row[1],
            "completion_tokens": row[2],
            "cost": None if unpriced else row[3],
            # invalid answers and abandoned calls; not those a stop cut off (below)
            "failed_calls": row[4],
            "target_calls": row[5],
            "priced_cost": row[3],
            "unpriced": unpriced,
            # sent by a process killed before their answers came (tokens and cost unknown)
            "in_flight": row[6],
            # cut off by a stop (Ctrl-C) and recorded as such: sent again on resume
            "interrupted": row[8],
            # to the embedded model (llama.cpp on this machine): not paid for
            "local_calls": row[7],
            # to the built-in fake provider (tests, trying a recipe): not paid for either
            "fake_calls": row[9],
        }

    def failed_calls(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT id, model, tag, error, raw_text FROM calls WHERE error IS NOT NULL"
        ).fetchall()
        return [
            dict(zip(("id", "model", "tag", "error", "raw_text"), r, strict=True)) for r in rows
        ]

    # -- jobs ------------------------------------------------------------------------------
    def add_jobs(self, stage: str, jobs: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Queue jobs; a job already done stays done, one that failed or was superseded is
        queued again."""
        with self.transaction():
            self.conn.executemany(
                "INSERT INTO jobs (id, stage, payload, updated_at) VALUES (?,?,?,?)"
                " ON CONFLICT(id) DO UPDATE SET status='pending'"
                " WHERE status IN ('failed', 'superseded')",
                ((jid, stage, json.dumps(p), time.time()) for jid, p in jobs),
            )

    def job_counts(self, stage: str) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT status, COUNT(*) FROM jobs WHERE stage=? GROUP BY status", (stage,)
        ).fetchall()
        return {s: n for s, n in rows}

    def claim_jobs(self, stage: str, n: int, ttl: float) -> list[tuple[str, dict[str, Any]]]:
        """Lease up to ``n`` jobs to run: pending ones first, then ones whose worker is gone
        or whose lease expired, atomically across processes. Both lookups go through the
        (stage, status) index, so taking a job costs the same with 10 or 10 million done."""
        now = time.time()
        with self.transaction():
            rows = self.conn.execute(
                "SELECT id, payload FROM jobs WHERE stage=? AND status='pending'"
                " ORDER BY rowid LIMIT ?",
                (stage, n),
            ).fetchall()
            if len(rows) < n:
                self._reclaim_dead(stage)
                rows += self.conn.execute(
                    "SELECT id, payload FROM jobs WHERE stage=? AND status IN ('pending',"
                    " 'leased') AND (status='pending' OR lease_expires < ?) AND id NOT IN"
                    " (SELECT value FROM json_each(?)) ORDER BY rowid LIMIT ?",
                    (stage, now, json.dumps([r[0] for r in rows]), n - len(rows)),
                ).fetchall()
            self.conn.executemany(
                "UPDATE jobs SET status='leased', lease_owner=?, lease_expires=? WHERE id=?",
                ((self.owner, now + ttl, jid) for jid, _ in rows),
            )
        return [(jid, json.loads(p)) for jid, p in rows]

    def renew_leases(self, ttl: float) -> None:
        self.conn.execute(
            "UPDATE jobs SET lease_expires=? WHERE status='leased' AND lease_owner=?",
            (time.time() + ttl, self.owner),
        )

    def drop_leases(self) -> None:
        """Give this worker's unfinished jobs back (it is stopping)."""
        self.conn.execute(
            "UPDATE jobs SET status='pending', lease_owner=NULL WHERE status='leased'"
            " AND lease_owner=?",
            (self.owner,),
        )

    def _reclaim_dead(self, stage: str) -> None:
        """Leases of workers on this machine that are gone (killed): pending again at once,
        without waiting for them to expire."""
        owners = self.conn.execute(
            "SELECT DISTINCT lease_owner FROM jobs WHERE stage=? AND status='leased'"
            " AND lease_owner!=?",
            (stage, self.owner),
        ).fetchall()
        for (owner,) in owners:
            try:
                os.kill(int(str(owner).split("-")[0]), 0)
            except ProcessLookupError:
                self.conn.execute(
                    "UPDATE jobs SET status='pending', lease_owner=NULL WHERE status='leased'"
                    " AND lease_owner=?",
                    (owner,),
                )
            except (ValueError, PermissionError):
                pass  # another machine's worker, or another user's: its lease expires

    def others_leasing(self, stage: str) -> int:
        """Jobs of ``stage`` that other live workers hold."""
        self._reclaim_dead(stage)
        row = self.conn.execute(
            "SELECT COUNT(*) FROM jobs WHERE stage=? AND status='leased' AND lease_owner!=?"
            " AND lease_expires >= ?",
            (stage, self.owner, time.time()),
        ).fetchone()
        return int(row[0])

    def fail_job(self, job_id: str, error: str) -> None:
        """Mark a job failed with its reason; its paid calls stay in the cache."""
        self.conn.execute(
            "UPDATE jobs SET status='failed', error=?, updated_at=? WHERE id=?",
            (error, time.time(), job_id),
        )

    def failed_jobs(self, stage: str) -> list[tuple[str, dict[str, Any], str]]:
        """(id, payload, reason) of every failed job of ``stage``."""
        rows = self.conn.execute(
            "SELECT id, payload, error FROM jobs WHERE stage=? AND status='failed' ORDER BY rowid",
            (stage,),
        ).fetchall()
        return [(jid, json.loads(p), err or "") for jid, p, err in rows]

    def set_job_status(self, job_ids: Iterable[str], status: str) -> None:
        """Set jobs ``pending`` again (to retry failed ones) or ``superseded`` (no longer
        needed: their work was done by other jobs)."""
        with self.transaction():
            self.conn.executemany(
                "UPDATE jobs SET status=?, updated_at=? WHERE id=?",
                ((status, time.time(), jid) for jid in job_ids),
            )

    def job_payloads(self, stage: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every job of ``stage`` with its payload, done or not."""
        for jid, payload in self.conn.execute(
            "SELECT id, payload FROM jobs WHERE stage=? ORDER BY rowid", (stage,)
        ):
            yield jid, json.loads(payload)

    def complete_job(
        self, job_id: str, records: Sequence[tuple[str, RecordKind | str, dict[str, Any]]]
    ) -> None:
        """Store a job's records, given as (id, kind, data), and mark the job done, atomically;
        records already stored (same id) are ignored, so a repeated job never duplicates. A
        kind may be given by its legacy stage name ("attack", "generate.refused")."""
        now = time.time()
        rows = []
        for rid, kind, data in records:
            k = RecordKind.of(kind)
            rows.append((rid, k.stage, job_id, json.dumps(data), now, k.value))
        with self.transaction():
            self.conn.executemany(
                "INSERT OR IGNORE INTO records (id, stage, job_id, data, created_at, kind)"
                " VALUES (?,?,?,?,?,?)",
                rows,
            )
            self.conn.execute(
                "UPDATE jobs SET status='done', error=NULL, updated_at=? WHERE id=?",
                (now, job_id),
            )

    # -- human review labels ---------------------------------------------------------------
    def add_label(self, kind: str, record_id: str, reviewer: str, data: dict[str, Any]) -> int:
        """Save a reviewer's label of a record (``kind`` "record" or "verdict") as a new
        version; earlier versions stay. Returns the version."""
        with self.transaction():
            row = self.conn.execute(
                "SELECT COALESCE(MAX(version), 0) FROM labels WHERE kind=? AND record_id=?"
                " AND reviewer=?",
                (kind, record_id, reviewer),
            ).fetchone()
            version = int(row[0]) + 1
            self.conn.execute(
                "INSERT INTO labels (kind, record_id, reviewer, version, created_at, data)"
                " VALUES (?,?,?,?,?,?)",
                (kind, record_id, reviewer, version, time.time(), json.dumps(data)),
            )
        return version

    def latest_labels(self, kind: str) -> list[dict[str, Any]]:
        """Each reviewer's latest label of each record: record_id, reviewer, version,
        created_at and the label's fields."""
        rows = self.conn.execute(
            "SELECT record_id, reviewer, version, created_at, data FROM labels l WHERE kind=?"
            " AND version = (SELECT MAX(version) FROM labels m WHERE m.kind=l.kind AND"
            " m.record_id=l.record_id AND m.reviewer=l.reviewer) ORDER BY id",
            (kind,),
        ).fetchall()
        return [
            {"record_id": r, "reviewer": who, "version": v, "created_at": t, **json.loads(d)}
            for r, who, v, t, d in rows
        ]

    # -- records ---------------------------------------------------------------------------
    def records(
        self, kind: RecordKind | str, job_ids: set[str] | None = None
    ) -> Iterator[dict[str, Any]]:
        """The stored lines of every record of ``kind`` (of the jobs ``job_ids``, when given),
        in the order stored."""
        for data in self.record_texts(kind, job_ids):
            yield json.loads(data)

    def record_texts(
        self, kind: RecordKind | str, job_ids: set[str] | None = None
    ) -> Iterator[str]:
        """:meth:`records` as the JSON texts stored, for a caller that validates them into
        its type straight from the text (``Model.model_validate_json``)."""
        cur = self.conn.execute(
            "SELECT job_id, data FROM records WHERE kind=? ORDER BY rowid",
            (RecordKind.of(kind).value,),
        )
        for job_id, data in cur:
            if job_ids is None or job_id in job_ids:
                yield data


class _Tx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
