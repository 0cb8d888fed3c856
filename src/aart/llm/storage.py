"""What the model layer needs from storage, as protocols: ``aart.store`` implements them
(``RunDB`` and its batch tables), so the model layer can be used and tested without it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .types import CallRecord

#: a batch request's states: waiting for a batch, in a batch, answered (``status``/``result``)
QUEUED, SUBMITTED, ANSWERED = "queued", "submitted", "answered"
#: a batch's states: being created (its id not known yet), open (waiting for the server),
#: imported (its answers are stored; what it did not answer is queued again)
CREATING, OPEN, IMPORTED = "creating", "open", "imported"


class CallStore(Protocol):
    """A response cache and a call log. (A store may also offer ``begin_call(model, tag) ->
    row``, to record a call as in flight before it is sent; see ``RunDB.begin_call``.)"""

    def cache_get(self, key: str) -> dict[str, Any] | None: ...
    def cache_put(self, key: str, model: str, value: dict[str, Any]) -> None: ...
    def record_call(self, record: CallRecord, row: int | None = None) -> int: ...


@dataclass
class BatchRequest:
    """A call waiting for (or answered by) a batch, named by its call's cache key."""

    key: str
    custom_id: str
    model: str
    endpoint: str
    body: dict[str, Any]
    state: str
    batch_id: str | None
    tries: int
    status: int | None
    result: str | None
    call_id: int | None


@dataclass
class Batch:
    id: str
    submission: str
    endpoint: str
    model: str
    state: str
    requests: int
    created_at: float
    info: dict[str, Any]

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Batch:
        bid, submission, endpoint, model, state, requests, created_at, info = row
        return cls(
            bid, submission, endpoint, model, state, requests, created_at, json.loads(info or "{}")
        )


class BatchStore(Protocol):
    """The batch requests and batches of a run. Every state change is durable before the
    next network step, so a crash at any point resumes without paying for a request twice."""

    def request(self, key: str) -> BatchRequest | None: ...
    def queue(self, key: str, custom_id: str, model: str, endpoint: str, body: Any) -> None: ...
    def requeue(self, key: str, body: Any | None = None) -> None: ...
    def queued(self, endpoint: str | None = None) -> list[BatchRequest]: ...
    def queued_endpoints(self) -> list[tuple[str, str, int]]: ...
    def by_custom_id(self, custom_id: str) -> BatchRequest | None: ...
    def answer(self, key: str, status: int, result: str, call_id: int | None) -> None: ...
    def counts(self) -> dict[str, int]: ...
    def add(
        self,
        batch_id: str,
        submission: str,
        endpoint: str,
        model: str,
        keys: Iterable[str],
        state: str,
    ) -> None: ...
    def rename(self, old: str, new: str) -> None: ...
    def forget(self, batch_id: str) -> None: ...
    def set_info(self, batch_id: str, info: dict[str, Any]) -> None: ...
    def close(self, batch_id: str) -> int: ...
    def open(self) -> list[Batch]: ...
    def all(self) -> list[Batch]: ...


class RunStore(CallStore, Protocol):
    """A call store that also keeps batch requests (a run's ``run.db``)."""

    def batches(self) -> BatchStore: ...
