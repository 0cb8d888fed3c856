"""Public prompt-injection benchmarks in as aart injection datasets: ``aart import
agentdojo|injecagent|bipia PATH`` reads a checkout of the benchmark's public data (never
running its code) and writes one :class:`aart.injection.InjectionCase` line per case, with
the benchmark's own axes as the cell and its success criterion, so a target's rates on it
compare with the published ones. One module per benchmark; :data:`BENCHMARKS` is the
registry."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import UsageError
from . import agentdojo, bipia, injecagent
from ._common import CheckoutError, Tally


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    url: str
    read: Callable[..., Iterator[dict[str, Any]]]
    #: what ``--split`` names, and what ``--subset`` chooses from
    splits: tuple[str, ...]
    subsets: tuple[str, ...]
    default_split: str


BENCHMARKS: dict[str, Benchmark] = {
    "agentdojo": Benchmark(
        "agentdojo", "AgentDojo", agentdojo.URL, agentdojo.read,
        ("v1", "v1.1", "v1.1.1", "v1.1.2", "v1.2", "v1.2.1"), agentdojo.SUITES, "v1",
    ),
    "injecagent": Benchmark(
        "injecagent", "InjecAgent", injecagent.URL, injecagent.read,
        injecagent.SPLITS, injecagent.SUBSETS, "base",
    ),
    "bipia": Benchmark(
        "bipia", "BIPIA", bipia.URL, bipia.read, bipia.SPLITS, bipia.TASKS, "test",
    ),
}  # fmt: skip


@dataclass
class Imported:
    lines: list[dict[str, Any]]
    tally: Tally
    seconds: float


def iter_benchmark(
    name: str,
    path: str | Path,
    tally: Tally | None = None,
    *,
    split: str | None = None,
    subset: list[str] | None = None,
    limit: int | None = None,
    **options: Any,
) -> Iterator[dict[str, Any]]:
    """The cases of benchmark ``name`` read from the checkout at ``path``, one at a time
    (BIPIA's train split is 221,250 of them); ``tally`` counts them as they come."""
    if name not in BENCHMARKS:
        raise UsageError(f"unknown benchmark {name!r}; use one of {', '.join(BENCHMARKS)}")
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    bench = BENCHMARKS[name]
    tally = tally if tally is not None else Tally(bench.title)
    lines = bench.read(str(path), tally, split=split, subset=subset, **options)
    return itertools.islice(lines, limit)


def import_benchmark(name: str, path: str | Path, **options: Any) -> Imported:
    """All the cases of benchmark ``name`` read from the checkout at ``path``, with the
    tally of what was read, converted and skipped."""
    bench = BENCHMARKS.get(name)
    tally = Tally(bench.title if bench else name)
    began = time.perf_counter()
    lines = list(iter_benchmark(name, path, tally, **options))
    return Imported(lines, tally, time.perf_counter() - began)


def write_dataset(lines: Iterable[dict[str, Any]], out: str | Path) -> int:
    """Write the lines as our JSONL dataset as they come (to a temporary file moved into
    place when all are written); return how many. None written: no file is left."""
    target = Path(out)
    if target.is_dir():
        raise UsageError(f"{target} is a folder; --out takes a .jsonl file")
    if target.suffix != ".jsonl":
        raise UsageError(f"{target}: --out takes a .jsonl file")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
                n += 1
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if n:
        tmp.replace(target)
    else:
        tmp.unlink(missing_ok=True)
    return n


__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "CheckoutError",
    "Imported",
    "Tally",
    "import_benchmark",
    "iter_benchmark",
    "write_dataset",
]
