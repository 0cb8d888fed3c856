"""Test helpers shipped with aart: a fake OpenAI-compatible HTTP server."""

from .fake_server import FakeOpenAIServer

__all__ = ["FakeOpenAIServer"]
