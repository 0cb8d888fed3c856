"""Moved: the batch transport is :mod:`aart.llm.transport.batch`, the ``/files`` +
``/batches`` client :mod:`aart.llm.providers.openai_batch`, and :class:`Deferred` lives in
:mod:`aart.errors`. This name is kept for old imports."""

from ..errors import Deferred
from .providers.openai_batch import CHAT_URL, NOT_RUN, request_lines
from .transport.batch import (
    EXPORT,
    MALFORMED,
    MAX_BYTES,
    MAX_REQUESTS,
    MAX_TRIES,
    TERMINAL,
    BatchQueue,
    BatchSettings,
    BatchTransport,
    custom_id,
)

__all__ = [
    "CHAT_URL",
    "EXPORT",
    "MALFORMED",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "MAX_TRIES",
    "NOT_RUN",
    "TERMINAL",
    "BatchQueue",
    "BatchSettings",
    "BatchTransport",
    "Deferred",
    "custom_id",
    "request_lines",
]
