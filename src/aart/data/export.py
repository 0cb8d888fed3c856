"""Dataset exports: JSONL (primary), CSV, Parquet.

CSV cells are neutralized against formula injection as OWASP recommends: a text cell that starts
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading single quote, so a
spreadsheet shows it as text instead of running it. JSONL and Parquet keep the text unchanged.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError


def _flat(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """A cell a spreadsheet will not evaluate as a formula (and that :func:`csv_unsafe` reads
    back as it was: a text that opens with a quote and a formula character gets one more)."""
    if isinstance(value, str) and value.lstrip("'").startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_unsafe(value: str) -> str:
    """A cell as it was before :func:`csv_safe`: a CSV that aart wrote reads back as the
    data it holds (a leading quote before anything else is the file's own)."""
    if value.startswith("'") and value.lstrip("'").startswith(_FORMULA_START):
        return value[1:]
    return value


def write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> int:
    n = 0
    tmp = _tmp(path)
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def write_json(data: Any, path: Path, indent: int = 2) -> None:
    """``data`` as a JSON file, whole or not at all: a crash or a kill mid-write leaves the
    previous file (the next run reads it back)."""
    tmp = _tmp(path)
    tmp.write_text(json.dumps(data, indent=indent, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def _tmp(path: Path) -> Path:
    """A temporary name of this process's own: two writers never share one."""
    return path.with_suffix(f"{path.suffix}.{os.getpid()}.tmp")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file; a line that is not a JSON object is a usage error naming
    the file and the line."""
    return list(iter_jsonl(path))


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """:func:`read_jsonl` one record at a time."""
    for n, row in numbered_json_lines(path):
        if not isinstance(row, dict):
            raise UsageError(f"{path}:{n}: expected a JSON object per line")
        yield row


def numbered_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of every non-blank line of a JSONL file; a line that is
    not JSON is a usage error naming the file and the line."""
    for n, line in utf8_lines(path):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(
                f"{path}:{n}: not valid JSON ({e.msg}); fix or delete the line"
            ) from None


def utf8_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file, newlines kept as written (the csv module wants
    them so); a line that is not UTF-8 is a usage error naming the file, the line and the way
    to convert it."""
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as e:
                byte = raw[e.start : e.start + 1].hex()
                raise UsageError(
                    f"{path}:{n}: not UTF-8 text (byte 0x{byte} at column {e.start + 1}, "
                    f"Latin-1 or Windows-1252 perhaps); save it as UTF-8, e.g. "
                    f"`iconv -f latin1 -t utf-8 {path} > {path.stem}.utf8{path.suffix}`"
                ) from None
            yield n, text


def write_csv(
    rows: Sequence[dict[str, Any]], path: Path, columns: Sequence[str] | None = None
) -> None:
    cols = list(columns) if columns else _columns(rows)
    tmp = _tmp(path)
    with tmp.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({c: csv_safe(_flat(row.get(c))) for c in cols})
    tmp.replace(path)


def write_parquet(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = _columns(rows) or ["prompt"]
    table = pa.table({c: [_flat(r.get(c)) for r in rows] for c in cols})
    tmp = _tmp(path)
    pq.write_table(table, tmp)
    tmp.replace(path)


def _columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    return list(cols)
