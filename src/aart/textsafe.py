"""Untrusted text made safe for a terminal.

Model output, dataset values, target replies and servers' error text reach the terminal in
messages and reports. Raw, their escape sequences clear the screen, paint a fake "gate
passed", plant OSC 8 links or write the clipboard (OSC 52). ``terminal_safe`` removes every
ANSI sequence (CSI, OSC, DCS and the other string sequences, two-byte escapes) and every C0
and C1 control except newline and tab; the CLI writes all its output through ``SafeStream``.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

# Each alternative is linear: disjoint classes, no nested repetition.
_SEQUENCE = re.compile(
    # CSI (ESC [ or 8-bit 0x9b): parameters, intermediates, final byte
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    # OSC, DCS, SOS, PM, APC (7- or 8-bit) up to BEL or ST, or to the end if unterminated
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    # any other escape: intermediates and a final byte
    r"|\x1b[ -/]*[0-~]?"
    # the remaining C0 controls but tab and newline, DEL, and C1
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
_ANY_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` without terminal control sequences; newlines and tabs are kept."""
    if not _ANY_CONTROL.search(text):
        return text
    return _SEQUENCE.sub("", text)


class SafeStream:
    """A text stream that writes ``terminal_safe`` text to the one it wraps. It has no
    ``buffer``, so nothing (click included) can go around it to the bytes beneath."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click probes with b"" to tell binary streams apart
            raise TypeError("SafeStream writes text only")
        self.raw.write(terminal_safe(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name in ("buffer", "rich_proxied_file"):
            raise AttributeError(name)
        return getattr(self.raw, name)


def raw_stream(stream: Any) -> Any:
    """The stream beneath any SafeStream wrappers (where aart's own progress bars draw)."""
    while isinstance(stream, SafeStream):
        stream = stream.raw
    return stream


@contextlib.contextmanager
def safe_output() -> Iterator[None]:
    """Route sys.stdout and sys.stderr through SafeStream until the block ends."""
    saved = sys.stdout, sys.stderr
    install_safe_output()
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def install_safe_output() -> None:
    """Route sys.stdout and sys.stderr through SafeStream (once)."""
    if sys.stdout is not None and not isinstance(sys.stdout, SafeStream):
        sys.stdout = SafeStream(sys.stdout)  # type: ignore[assignment]
    if sys.stderr is not None and not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)  # type: ignore[assignment]
