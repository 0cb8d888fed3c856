"""Moved to :mod:`aart.llm.transport.ray`; this name is kept for old imports."""

from .transport.ray import (
    NAMESPACE,
    CallWorker,
    EndpointLimiter,
    RayExecutor,
    RaySettings,
    RayTransport,
)

__all__ = [
    "NAMESPACE",
    "CallWorker",
    "EndpointLimiter",
    "RayExecutor",
    "RaySettings",
    "RayTransport",
]
