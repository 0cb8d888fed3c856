"""Moved to :mod:`aart.llm.transport.ray`; this name is kept for old imports."""

from .transport.ray import CallWorker, EndpointLimiter, RayExecutor, RaySettings, RayTransport

__all__ = ["CallWorker", "EndpointLimiter", "RayExecutor", "RaySettings", "RayTransport"]
