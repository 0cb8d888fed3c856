"""Turn what real models write into JSON: strip reasoning and fences, extract, repair, validate."""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair
import jsonschema

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(</\1>|$)", re.S | re.I)
_FENCE = re.compile(r"```(?:json|JSON|jsonl)?\s*\n?(.*?)(```|$)", re.S)

REFUSAL_PATTERNS = re.compile(
    r"\b(I can(?:'|no)t (?:help|assist|provide|create|generate|comply|fulfil)"
    r"|I(?: am|'m) (?:sorry|unable|not able)"
    r"|I (?:won't|will not) (?:help|provide|create|generate)"
    r"|as an AI(?: language model)?, I"
    r"|I must (?:decline|refuse))",
    re.I,
)


def strip_reasoning(text: str) -> str:
    """Remove ``<think>`` style blocks, closed or left open by a truncated answer."""
    return _THINK.sub("", text).strip()


def extract_json_text(text: str) -> str | None:
    """Return the most likely JSON fragment in ``text``, or None when there is none."""
    text = strip_reasoning(text)
    fence = _FENCE.search(text)
    if fence and fence.group(1).strip()[:1] in "{[":
        text = fence.group(1)
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    return text[min(starts) :].strip()


def parse_json(text: str) -> Any:
    """Parse JSON tolerantly; raise ValueError when nothing usable is found."""
    fragment = extract_json_text(text)
    if fragment is None:
        raise ValueError("no JSON object or array in the answer")
    try:
        return json.loads(fragment)
    except json.JSONDecodeError:
        pass
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


def looks_like_refusal(text: str) -> bool:
    """A cheap check for a model declining the request."""
    head = strip_reasoning(text)[:400]
    return bool(REFUSAL_PATTERNS.search(head))


def schema_instructions(schema: dict[str, Any]) -> str:
    """Prompt text for servers that support no structured output at all."""
    return (
        "Answer with one JSON value only, no prose and no code fences, "
        "that validates against this JSON Schema:\n" + json.dumps(schema, indent=1)
    )
