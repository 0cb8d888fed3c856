"""The static baselines at the search's budget (``--compare``): the dataset as it is, sent
once under ``identity``, and PAIR on the same prompts, each an ordinary attack
(:class:`~aart.redteam.session.AttackSession`) in OUT/compare/, so they resume, cache and
report as `aart attack` does. Their figures are counted on the search's axis cells."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import AartError
from ..redteam.findings import Findings
from ..redteam.session import AttackSession
from .archive import STRATEGY_AXIS, cell_key
from .session import SearchResult

#: PAIR's rounds at most (the attack's own limit)
MAX_ROUNDS = 20


def plans(budget: int, prompts: int) -> dict[str, dict[str, Any]]:
    """The attack settings of each baseline for ``budget`` target queries over ``prompts``
    prompts: the static dataset sends each prompt once (all of them, or ``budget`` spread
    over the cells); PAIR refines every prompt for budget/prompts rounds (or a third of the
    budget's prompts for 3 rounds, when the budget is below the dataset)."""
    static: dict[str, Any] = {"strategies": [], "sample": budget if budget < prompts else None}
    if budget >= prompts:
        pair = {"strategies": ["pair"], "sample": None,
                "max_rounds": max(1, min(MAX_ROUNDS, budget // prompts))}  # fmt: skip
    else:
        pair = {"strategies": ["pair"], "sample": max(1, budget // 3), "max_rounds": 3}
    return {"static (identity)": static, "PAIR": pair}


def run_baselines(
    result: SearchResult,
    out: Path,
    report: Callable[[Findings, Path], Any] | None = None,
) -> None:
    """Run both baselines into ``out``/compare/ and put their figures in
    ``result.baselines``; a baseline that fails says why and the search stands."""
    for name, settings in plans(result.spec.budget, result.dataset_prompts).items():
        # one directory per budget: a search taken further compares afresh at its new budget
        kind = "static" if settings["strategies"] == [] else "pair"
        where = out / "compare" / f"{kind}-{result.spec.budget}"
        result.baselines[name] = run_baseline(result, where, settings, report)


def run_baseline(
    result: SearchResult,
    where: Path,
    settings: dict[str, Any],
    report: Callable[[Findings, Path], Any] | None = None,
    dataset: Path | None = None,
) -> dict[str, Any]:
    """One baseline: the search's attack settings with ``settings`` (a plan's) as an ordinary
    attack into ``where``, over the search's dataset or ``dataset`` (a benchmark's larger
    static one), and its figures on the search's axis cells; a failed one says why."""
    spec = result.spec
    axes = spec.axes or sorted({a for c in result.archive.cells for a in c} - {STRATEGY_AXIS})
    update = {**settings, "limit": None, "seed": spec.seed}
    if dataset is not None:
        update["dataset"] = str(dataset)
    attack = spec.attack.model_copy(update=update)
    try:
        AttackSession(attack, where, report=report).run()
    except AartError as e:
        return {"error": str(e)[:300], "out": str(where)}
    strategy = "pair" if settings["strategies"] else "identity"
    got = figures(where / "results.jsonl", strategy, axes)
    got.update(out=str(where), settings=settings)
    return got


def figures(results: Path, strategy: str, axes: list[str]) -> dict[str, Any]:
    """Target queries, successes and the axis cells with a success of one baseline, read from
    its results.jsonl (the lines of ``strategy``)."""
    queries = successes = judged = 0
    won: set[str] = set()
    for raw in results.read_text(encoding="utf-8").splitlines():
        line = json.loads(raw)
        if line.get("strategy") != strategy or line.get("state") in ("failed", "not run"):
            continue
        queries += int(line.get("queries") or 1)
        if line.get("success") is not None:
            judged += 1
        if line.get("success"):
            successes += 1
            cell = line.get("cell") or {}
            if all(a in cell for a in axes):
                won.add(cell_key({a: cell[a] for a in axes}))
    return {
        "queries": queries,
        "judged": judged,
        "successes": successes,
        "cells_with_success": len(won),
    }
