"""Fake models for tests and dry runs, shipped in the package so tests drive the real pipeline.

- ``fake/<anything>`` answers deterministically: with a schema, a schema-valid JSON value
  synthesized from the prompt; without one, a short text.
- :class:`ScriptedAPI` returns queued responses (text, JSON-able values, exceptions or
  callables) and is registered under a name of your choosing with :func:`register_script`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..types import GenerateConfig, Message, RawResponse, Usage
from .base import ModelAPI, ModelOptions, register_provider

WORDS = (
    "amber basalt cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon meadow "
    "nectar onyx prairie quartz raven sierra tundra umber valley willow xenon yarrow zephyr"
).split()


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class SchemaSynthesizer:
    """Builds a deterministic instance of a JSON Schema (the subset aart's steps use)."""

    def __init__(self, seed_text: str) -> None:
        self.rng = random.Random(hashlib.sha256(seed_text.encode()).digest())
        self.counter = 0

    def make(self, schema: dict[str, Any], name: str = "value", context: str = "") -> Any:
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        if "const" in schema:
            return schema["const"]
        if "anyOf" in schema:
            return self.make(schema["anyOf"][0], name, context)
        kind = schema.get("type", "string")
        if isinstance(kind, list):
            kind = kind[0]
        if kind == "object":
            props = schema.get("properties", {})
            out: dict[str, Any] = {}
            # Enum fields first, so free-text fields can mention what was chosen.
            order = sorted(props, key=lambda k: "enum" not in props[k])
            for key in order:
                chosen = " ".join(str(out[k]) for k in out if "enum" in props[k])
                out[key] = self.make(props[key], key, chosen)
            return {k: out[k] for k in props}
        if kind == "array":
            lo = schema.get("minItems", 1)
            hi = schema.get("maxItems", max(lo, 3))
            n = max(lo, min(hi, 3))
            return [self.make(schema.get("items", {}), name, context) for _ in range(n)]
        if kind == "integer":
            return int(schema.get("minimum", 0))
        if kind == "number":
            return float(schema.get("minimum", 0))
        if kind == "boolean":
            return False
        self.counter += 1
        words = " ".join(self.rng.sample(WORDS, 3))
        label = name.replace("_", " ")
        text = f"{label} {words} {self.counter}"
        if context:
            text += f" about {context}"
        return text


class SchemaFakeAPI(ModelAPI):
    """``fake/<name>``: deterministic answers, valid against any schema aart sends."""

    default_concurrency = 64

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        await asyncio.sleep(0)
        prompt = "\n".join(m.content for m in messages)
        seed_text = f"{self.model}|{config.seed}|{prompt}"
        if schema is None:
            text = f"[{self.model}] response to: {messages[-1].content[:200]}"
        else:
            text = json.dumps(SchemaSynthesizer(seed_text).make(schema))
        return RawResponse(text=text, usage=Usage(_tokens(prompt), _tokens(text)))


Script = Any  # str | dict | list | BaseException | Callable[[list[Message], dict|None], Any]


class ScriptedAPI(ModelAPI):
    """Returns queued responses in order; when the queue runs dry it repeats the last one."""

    default_concurrency = 8

    def __init__(self, model: str, options: ModelOptions, responses: Iterable[Script]) -> None:
        super().__init__(model, options)
        self.queue: deque[Script] = deque(responses)
        self.last: Script = "" if not self.queue else None
        self.calls: list[list[Message]] = []

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        self.calls.append(messages)
        item = self.queue.popleft() if self.queue else self.last
        self.last = item
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            item = item(messages, schema)
        text = item if isinstance(item, str) else json.dumps(item)
        prompt = "\n".join(m.content for m in messages)
        return RawResponse(text=text, usage=Usage(_tokens(prompt), _tokens(text)))


def register_script(name: str, responses: Iterable[Script]) -> Callable[[], ScriptedAPI]:
    """Register provider ``name`` whose every model shares one script; returns a getter
    for the last instance created, so tests can inspect the calls it received."""
    script = list(responses)
    holder: list[ScriptedAPI] = []

    def factory(model: str, options: ModelOptions) -> ModelAPI:
        api = ScriptedAPI(model, options, script)
        holder.append(api)
        return api

    register_provider(name, factory)
    return lambda: holder[-1]


register_provider("fake", SchemaFakeAPI)
