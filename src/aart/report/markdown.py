"""Markdown output of untrusted text: every cell and label escaped, so a value holding `|`, a
newline, Markdown syntax or HTML renders as the text it is."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

# What can break a table row or turn text into markup: pipes, backslashes, code spans,
# emphasis and link brackets (underscores inside words are left alone: GFM ignores them, and
# dimension names are full of them); HTML is entity-escaped.
_SPECIAL = re.compile(r"([\\`*\[\]|])")
# an underscore at a word's edge can open or close emphasis ("_it_"): escaped
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_escape(value: object) -> str:
    """``value`` as literal Markdown text on one line."""
    text = " ".join(str(value).split())
    text = _EDGE_UNDERSCORE.sub(r"\\_", _SPECIAL.sub(r"\\\1", text))
    return html.escape(text, quote=False)


def md_table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return lines
