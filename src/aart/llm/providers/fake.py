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
import re
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


# A generation prompt names each query's cell on a line "Query N: dim: value; dim: value", or
# in the recipe's own phrasing (cell_template) that holds the values.
_CELL_LINE = re.compile(r"^Query \d+: (.+)$", re.M)


def cell_contexts(prompt: str) -> list[str]:
    """The values each query of a generation prompt must embody, one string per query."""
    return [
        " ".join(p.partition(": ")[2] or p for p in line.split("; "))
        for line in _CELL_LINE.findall(prompt)
    ]


class SchemaSynthesizer:
    """Builds a deterministic instance of a JSON Schema (the subset aart's steps use). Given
    ``contexts`` (one per item of the top-level array), item i's texts mention contexts[i], so a
    fake generator writes prompts faithful to their cells."""

    def __init__(self, seed_text: str, contexts: list[str] | None = None) -> None:
        self.rng = random.Random(hashlib.sha256(seed_text.encode()).digest())
        self.counter = 0
        self.contexts = contexts or []

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
                out[key] = self.make(props[key], key, " ".join(filter(None, [context, chosen])))
            return {k: out[k] for k in props}
        if kind == "array":
            lo = schema.get("minItems", 1)
            hi = schema.get("maxItems", max(lo, 3))
            n = max(lo, min(hi, 3))
            contexts, self.contexts = self.contexts, []  # only the outermost array's items
            return [
                self.make(
                    schema.get("items", {}), name, contexts[i] if i < len(contexts) else context
                )
                for i in range(n)
            ]
        if kind == "integer":
            return int(schema.get("minimum", 0))
        if kind == "number":
            return float(schema.get("minimum", 0))
        if kind == "boolean":
            return False
        self.counter += 1
        if not context:  # a short name, e.g. an enumerated value
            return f"{' '.join(self.rng.sample(WORDS, 2))} {self.counter}"
        words = " ".join(self.rng.sample(WORDS, 3))
        return f"{name.replace('_', ' ')} {words} {self.counter} about {context}"


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
            text = synthesize(schema, prompt, seed_text)
        return RawResponse(text=text, usage=Usage(_tokens(prompt), _tokens(text)))


def _has_array(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "array":
        return True
    return any(_has_array(v) for v in (schema.get("properties") or {}).values())


def synthesize(schema: dict[str, Any], prompt: str, seed_text: str) -> str:
    """A deterministic, schema-valid JSON answer to ``prompt``, faithful to its cells. A
    prompt that names one cell and asks for one flat object (a rewrite by an attacker model
    told which cell to stay in, as `aart search` asks) gets texts that mention that cell."""
    contexts = cell_contexts(prompt)
    synth = SchemaSynthesizer(seed_text, contexts)
    if len(contexts) == 1 and schema.get("type") == "object" and not _has_array(schema):
        return json.dumps(synth.make(schema, context=contexts[0]))
    return json.dumps(synth.make(schema))


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
