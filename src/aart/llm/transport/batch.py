"""The batch transport: a call is answered if a batch brought its answer, else queued and
:class:`~aart.errors.Deferred` (see aart.llm.batch, where it lives for now)."""

from __future__ import annotations

from typing import Any

from ..batch import BatchQueue, BatchSettings

#: the batch transport by its role's name
BatchTransport = BatchQueue

__all__ = ["BatchSettings", "BatchTransport", "batch_of"]


def batch_of(transport: Any) -> BatchTransport | None:
    """The batch transport a factory started (``factory.transport``), if it did: what the
    job runner flushes between rounds."""
    return transport if isinstance(transport, BatchTransport) else None
