"""Test helpers shipped with aart: a fake OpenAI-compatible HTTP server.

``FakeOpenAIServer`` is imported on first use, not with the package: `python -m
aart.testing.fake_server` then runs the module once, as ``__main__``, without the
RuntimeWarning runpy gives for a module the package had imported already."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fake_server import FakeOpenAIServer

__all__ = ["FakeOpenAIServer"]


def __getattr__(name: str) -> Any:
    if name == "FakeOpenAIServer":
        from .fake_server import FakeOpenAIServer

        return FakeOpenAIServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
