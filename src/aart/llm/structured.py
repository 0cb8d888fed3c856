"""Turn what real models write into JSON: strip reasoning and fences, extract, repair, validate."""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair
import jsonschema

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(</\1>|$)", re.S | re.I)
_FENCE = re.compile(r"```(?:json|JSON|jsonl)?\s*\n?(.*?)(```|$)", re.S)


def strip_reasoning(text: str) -> str:
    """Remove ``<think>`` style blocks, closed or left open by a truncated answer."""
    return _THINK.sub("", text).strip()


def _body(text: str) -> str:
    """The answer without reasoning blocks, or the fenced block when there is one."""
    text = strip_reasoning(text)
    fence = _FENCE.search(text)
    if fence and fence.group(1).strip()[:1] in "{[":
        return fence.group(1)
    return text


def _start(body: str, root: str | None) -> int | None:
    """Where the JSON most likely starts: the first opener of the schema's root type, else the
    first opener of either kind."""
    opener = {"object": "{", "array": "["}.get(root or "")
    if opener and opener in body:
        return body.index(opener)
    starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
    return min(starts) if starts else None


def extract_json_text(text: str, root: str | None = None) -> str | None:
    """Return the most likely JSON fragment in ``text``, or None when there is none. With
    ``root`` ("object" or "array") a fragment of that kind is preferred."""
    body = _body(text)
    start = _start(body, root)
    return None if start is None else body[start:].strip()


def _complete_values(body: str, limit: int = 50) -> list[tuple[int, Any]]:
    """Every complete JSON object or array in ``body``, as (where it starts, value)."""
    decoder = json.JSONDecoder()
    out: list[tuple[int, Any]] = []
    for m in re.finditer(r"[{\[]", body):
        if len(out) >= limit:
            break
        try:
            value, _ = decoder.raw_decode(body, m.start())
        except json.JSONDecodeError:
            continue
        out.append((m.start(), value))
    return out


def parse_json(text: str, schema: dict[str, Any] | None = None) -> Any:
    """Parse JSON tolerantly; raise ValueError when nothing usable is found. Of several JSON
    values in the text ("Here are [3] queries: {...}"), the first that satisfies ``schema``
    wins; else the value where the JSON most likely starts, repaired when truncated."""
    body = _body(text)
    values = _complete_values(body)
    if schema is not None:
        for _, value in values:
            if not schema_errors(value, schema):
                return value
    root = schema.get("type") if schema else None
    start = _start(body, root if isinstance(root, str) else None)
    if start is None:
        raise ValueError("no JSON object or array in the answer")
    for where, value in values:
        if where == start:  # complete, perhaps followed by prose
            return value
    fragment = body[start:].strip()
    repaired = json_repair.loads(fragment)
    if repaired in ("", None, [], {}) and fragment not in ("[]", "{}"):
        raise ValueError("the answer's JSON could not be repaired")
    return repaired


def schema_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Validation messages for ``value`` against ``schema`` (empty when valid)."""
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
        for e in validator.iter_errors(value)
    ][:10]


def schema_instructions(schema: dict[str, Any]) -> str:
    """Prompt text for servers that support no structured output at all."""
    return (
        "Answer with one JSON value only, no prose and no code fences, "
        "that validates against this JSON Schema:\n" + json.dumps(schema, indent=1)
    )
