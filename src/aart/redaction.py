"""Secret values this process has read from the environment, and text with them masked.

An API key or a target file's ``${VAR}`` reaches a server in a header; a server (a gateway, a
proxy, a debugging target) may echo it in an error body, which aart quotes in messages, in
``run.db`` and in reports. Every place that reads a secret from the environment calls
:func:`remember`; :func:`redact` then shows each remembered value as the ``${VAR}`` it came
from, wherever a server's text is quoted.
"""

from __future__ import annotations

import re
import threading

# a value shorter than this is not masked: it would blot out ordinary words
MIN_LENGTH = 4

_lock = threading.Lock()
_known: dict[str, str] = {}  # value -> the variable it came from
# what redact reads, replaced whole on each remember (never mutated under a reader)
_masks: tuple[re.Pattern[str], dict[str, str]] | None = None


def remember(var: str, value: str | None) -> None:
    """Mask ``value`` (read from ``$var``) in every :func:`redact` from now on."""
    global _masks
    if not value or len(value) < MIN_LENGTH:
        return
    with _lock:
        if _known.get(value) == var:
            return
        _known[value] = var
        # longest first: a secret that contains another is masked whole
        values = sorted(_known, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(v) for v in values), re.I)
        _masks = (pattern, {v.lower(): name for v, name in _known.items()})


def redact(text: str) -> str:
    """``text`` with every remembered secret (in any case) shown as ``${VAR}``."""
    masks = _masks
    if masks is None or not text:
        return text
    pattern, names = masks
    return pattern.sub(lambda m: f"${{{names.get(m.group(0).lower(), 'SECRET')}}}", text)
