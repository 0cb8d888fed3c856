"""What the model layer needs from storage, as protocols: ``aart.store`` implements them,
so the model layer can be used and tested without it."""

from __future__ import annotations

from typing import Any, Protocol

from .types import CallRecord


class CallStore(Protocol):
    """A response cache and a call log. (A store may also offer ``begin_call(model, tag) ->
    row``, to record a call as in flight before it is sent; see ``RunDB.begin_call``.)"""

    def cache_get(self, key: str) -> dict[str, Any] | None: ...
    def cache_put(self, key: str, model: str, value: dict[str, Any]) -> None: ...
    def record_call(self, record: CallRecord, row: int | None = None) -> int: ...
