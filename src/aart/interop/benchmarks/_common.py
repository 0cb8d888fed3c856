"""What the three importers share: bounded reading of a checkout (it is untrusted input:
read, never executed), located errors, the tally of what was read, converted and skipped,
and the one function that builds (and validates) a case line."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ...errors import UsageError
from ...injection import InjectionCase, ToolSpec

#: one file of a checkout is read up to this size (the largest data file of the three
#: benchmarks is about 1.6 MB; a file over the bound is refused, not truncated)
MAX_FILE_BYTES = 16 * 1024 * 1024
#: a whole import reads at most this much (a wrong PATH pointing at a disk fails early)
MAX_TOTAL_BYTES = 256 * 1024 * 1024


class CheckoutError(UsageError):
    """PATH is not a checkout of the benchmark, or one of its files is malformed."""


@dataclass
class Tally:
    """What an import read, converted and skipped (by reason), for the terminal and the
    ``--report`` JSON."""

    benchmark: str
    read: int = 0
    converted: int = 0
    judged: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0
    files: list[str] = field(default_factory=list)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] += n

    def note(self, what: str, n: int = 1) -> None:
        self.notes[what] += n

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "read": self.read,
            "converted": self.converted,
            "judge_only": self.judged,
            "skipped": dict(sorted(self.skipped.items())),
            "notes": dict(sorted(self.notes.items())),
            "files_read": len(self.files),
            "bytes_read": self.bytes_read,
        }


class Checkout:
    """A benchmark's checkout on disk, read with bounds and confined to its root."""

    def __init__(self, root: str | Path, benchmark: str, tally: Tally) -> None:
        self.root = Path(root)
        self.benchmark = benchmark
        self.tally = tally
        if not self.root.is_dir():
            raise CheckoutError(
                f"{root}: not a directory; give the path of a checkout of {benchmark}"
            )
        self._real = self.root.resolve()

    def path(self, rel: str) -> Path:
        p = (self.root / rel).resolve()
        # a symlink in the checkout must not lead the importer out of it
        if p != self._real and self._real not in p.parents:
            raise CheckoutError(f"{self.root / rel}: leads outside the checkout; refused")
        return p

    def rel(self, p: Path) -> str:
        """``p`` (a path :meth:`path` gave, or a file found under one) as the checkout-relative
        text :meth:`path` takes, whether the checkout was given as a relative path or not."""
        return str(PurePosixPath(p.resolve().relative_to(self._real)))

    def exists(self, rel: str) -> bool:
        try:
            return self.path(rel).is_file()
        except CheckoutError:
            return False

    def require(self, rel: str, what: str) -> Path:
        """The file ``rel``, or a one-line error naming it and what it holds."""
        p = self.root / rel
        if not self.exists(rel):
            raise CheckoutError(
                f"{self.root}: not a checkout of {self.benchmark}: expected {rel} ({what})"
            )
        return p

    def text(self, rel: str) -> str:
        p = self.path(rel)
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise CheckoutError(
                f"{self.root / rel}: {size} bytes, over the {MAX_FILE_BYTES} a benchmark "
                "file may have; is this the benchmark's file?"
            )
        self.tally.bytes_read += size
        if self.tally.bytes_read > MAX_TOTAL_BYTES:
            raise CheckoutError(
                f"{self.root}: over {MAX_TOTAL_BYTES} bytes read; is this the benchmark's checkout?"
            )
        self.tally.files.append(rel)
        try:
            return p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise CheckoutError(f"{self.root / rel}: not UTF-8 text (byte {e.start})") from None

    def json(self, rel: str) -> Any:
        text = self.text(rel)
        try:
            return json.loads(text)
        except ValueError as e:
            raise CheckoutError(f"{self.root / rel}:{_where(e)}: not valid JSON") from None
        except RecursionError:
            raise CheckoutError(f"{self.root / rel}: JSON nested too deep to be data") from None

    def python(self, rel: str) -> ast.Module:
        """The file's syntax tree (parsed, never imported nor run)."""
        try:
            return ast.parse(self.text(rel), filename=rel)
        except SyntaxError as e:
            raise CheckoutError(
                f"{self.root / rel}:{e.lineno}: not valid Python ({e.msg})"
            ) from None
        except (RecursionError, MemoryError, ValueError):
            raise CheckoutError(f"{self.root / rel}: too deeply nested to read as Python") from None

    def jsonl(self, rel: str) -> list[Any]:
        out = []
        for n, line in enumerate(self.text(rel).splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except RecursionError:
                raise CheckoutError(f"{self.root / rel}:{n}: JSON nested too deep") from None
            except ValueError as e:
                col = getattr(e, "colno", None)
                raise CheckoutError(
                    f"{self.root / rel}:{n}{f':{col}' if col else ''}: not a JSON line"
                ) from None
        return out

    def licence(self, *names: str) -> str:
        """The licence the checkout's LICENSE file names (its first words), or ``unknown``."""
        for name in names or ("LICENSE", "LICENCE", "LICENSE.md", "LICENSE.txt"):
            if self.exists(name):
                head = self.text(name)[:400]
                for known in ("MIT", "Apache", "BSD", "GPL", "CC BY"):
                    if re.search(rf"\b{re.escape(known)}", head):
                        return {"Apache": "Apache-2.0", "CC BY": "CC-BY"}.get(known, known)
                return "see LICENSE"
        return "unknown"

    def revision(self) -> str:
        """The commit of a git checkout, read from ``.git`` (never by running git), or ''."""
        try:
            head = self.path(".git/HEAD")
            if not head.is_file():
                return ""
            ref = head.read_text(encoding="utf-8", errors="replace")[:200].strip()
            if ref.startswith("ref: "):
                target = self.path(".git/" + ref[5:].strip())
                if target.is_file():
                    ref = target.read_text(encoding="utf-8", errors="replace")[:100].strip()
                else:
                    return ""
            return ref if re.fullmatch(r"[0-9a-f]{40}", ref) else ""
        except (CheckoutError, OSError):
            return ""


def _where(e: ValueError) -> str:
    line, col = getattr(e, "lineno", None), getattr(e, "colno", None)
    return f"{line}:{col}" if line else "1"


def located(root: Path, rel: str, index: int | None, message: str) -> CheckoutError:
    """An error about one record of a data file (its index in the file's list)."""
    at = f" record {index}" if index is not None else ""
    return CheckoutError(f"{root / rel}:{at}: {message}")


def escape(text: str) -> str:
    """``text`` as a pattern matching itself: only the metacharacters escaped, so the
    pattern stays readable in the dataset (``re.escape`` also escapes spaces and dashes)."""
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


def literal_pattern(value: Any) -> str | None:
    """The argument pattern for a literal value the benchmark expects: the text, escaped,
    for a string; None for what a pattern would state badly (numbers, objects)."""
    if isinstance(value, str) and value and not value.startswith("$"):
        return escape(value)
    return None


def case_line(
    *,
    id: str,
    payload: str,
    user_task: str,
    context: str,
    start: int,
    channel: str,
    carrier: str,
    success: Mapping[str, Any],
    cell: Mapping[str, str],
    source: Mapping[str, Any],
    via_tool: str = "",
    via_arguments: dict[str, Any] | None = None,
    utility: Mapping[str, Any] | None = None,
    tools: Iterable[ToolSpec] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One dataset line, validated as :class:`InjectionCase` (raises ValueError if not)."""
    injection: dict[str, Any] = {"channel": channel, "carrier": carrier}
    if start >= 0:
        injection.update(start=start, end=start + len(payload))
    if via_tool:
        injection["via_tool"] = via_tool
    if via_arguments:
        injection["via_arguments"] = via_arguments
    line: dict[str, Any] = {
        "id": id,
        "prompt": payload,
        "cell": dict(cell),
        "user_task": user_task,
        "context": context,
        "injection": injection,
        "success": dict(success),
    }
    if utility:
        line["utility"] = dict(utility)
    case = InjectionCase.of(line, where=id)
    assert case is not None
    line.update(case.fields())
    if tools:
        line["tools"] = [t.model_dump(exclude_defaults=True) for t in tools]
    line["source"] = dict(source)
    if extra:
        line.update(extra)
    return line
