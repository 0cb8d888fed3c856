"""Public prompt-injection benchmarks in as aart injection datasets: ``aart import
agentdojo|injecagent|bipia PATH`` reads a checkout of the benchmark's public data (never
running its code) and writes one :class:`aart.injection.InjectionCase` line per case, with
the benchmark's own axes as the cell and its success criterion, so a target's rates on it
compare with the published ones. One module per benchmark; :data:`BENCHMARKS` is the
registry."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
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
    read: Callable[..., list[dict[str, Any]]]
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


def import_benchmark(
    name: str,
    path: str | Path,
    *,
    split: str | None = None,
    subset: list[str] | None = None,
    limit: int | None = None,
    **options: Any,
) -> Imported:
    """The cases of benchmark ``name`` read from the checkout at ``path``."""
    if name not in BENCHMARKS:
        raise UsageError(f"unknown benchmark {name!r}; use one of {', '.join(BENCHMARKS)}")
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    bench = BENCHMARKS[name]
    tally = Tally(bench.title)
    began = time.perf_counter()
    lines = bench.read(str(path), tally, split=split, subset=subset, limit=limit, **options)
    if limit is not None:
        lines = lines[:limit]
        tally.converted = min(tally.converted, len(lines))
    return Imported(lines, tally, time.perf_counter() - began)


def write_dataset(lines: list[dict[str, Any]], out: str | Path) -> Path:
    """The lines as our JSONL dataset (written whole, then moved into place)."""
    target = Path(out)
    if target.is_dir():
        raise UsageError(f"{target} is a folder; --out takes a .jsonl file")
    if target.suffix != ".jsonl":
        raise UsageError(f"{target}: --out takes a .jsonl file")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    tmp.replace(target)
    return target


__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "CheckoutError",
    "Imported",
    "import_benchmark",
    "write_dataset",
]
