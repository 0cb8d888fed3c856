"""`aart search`: a quality-diversity search for failures over the recipe's cells (a MAP-Elites
archive, Rainbow-Teaming style). :func:`search` resolves the settings, runs the search
(:class:`~.session.SearchSession`), the static baselines when asked (``compare``) and writes
the outputs (``outputs``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..redteam.findings import Findings
from .archive import Archive, Elite
from .mutate import MUTATIONS
from .session import SearchResult, SearchSession
from .spec import SearchSpec

__all__ = ["MUTATIONS", "Archive", "Elite", "SearchResult", "SearchSession", "SearchSpec", "search"]


def search(
    dataset: str | Path,
    *,
    out: str | Path,
    report: Callable[[Findings, Path], Any] | None = None,
    **settings: Any,
) -> SearchResult:
    """Search ``dataset``'s cells for failures of the target, write OUT/archive.jsonl,
    regression.jsonl, attack.json, search.json and report.html, and return the result.
    ``settings``: :meth:`SearchSpec.resolve`'s (budget, axes, strategies, pick, mutations,
    seed, parallel, attacker, compare) and `aart attack`'s (target, judge, ...). ``report``
    writes the baselines' attack reports (``aart.report.attack.write_attack_report``)."""
    from . import compare, outputs

    spec = SearchSpec.resolve(dataset, **settings)
    result = SearchSession(spec, out).run()
    if spec.compare and result.finished:
        compare.run_baselines(result, Path(out), report)
    outputs.write(result, Path(out))
    return result
