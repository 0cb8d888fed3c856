"""What a search leaves in its directory: ``archive.jsonl`` (one elite per cell with its
lineage, readable as an aart dataset: `aart attack` replays each elite's strategy),
``regression.jsonl`` (the successful elites, as failures.jsonl is for an attack),
``attack.json`` (the summary `aart attack --baseline` reads, so attacking the regression set
again after a fix says what was fixed), ``search.json`` and ``report.html`` with the archive's
coverage over the target queries. Every piece of model text in the report is escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..data.export import write_jsonl
from ..redteam.records import RegressionRow
from ..redteam.strategies import IDENTITY
from ..report.html import esc, page, table
from .archive import STRATEGY_AXIS, Elite, cell_key
from .session import SearchResult

#: how much of a prompt or reply the report shows
SHOWN = 600


def _axes(cell: dict[str, str]) -> dict[str, str]:
    return {a: v for a, v in cell.items() if a != STRATEGY_AXIS}


def archive_line(e: Elite) -> dict[str, Any]:
    """An elite as a dataset line: id, prompt, cell, its strategy (none: the control), then
    its lineage and verdicts."""
    line: dict[str, Any] = {"id": e.id, "prompt": e.prompt, "cell": _axes(e.cell)}
    if e.case:  # an injection case: its carrier (payload in place), task and criterion
        line.update(e.case)
    strategy = e.cell.get(STRATEGY_AXIS, IDENTITY)
    if strategy != IDENTITY:
        line["strategy"] = strategy
    line["lineage"] = {
        "parent": e.parent,
        "mutation": e.mutation,
        "iteration": e.iteration,
        "queries": e.queries,
    }
    if e.frames:  # the deterministic frames around the request, innermost first
        line["lineage"]["frames"] = e.frames
        line["lineage"]["request"] = e.request
    if e.fallback:  # the attacker's rewrite was unusable: what it was asked, and why
        line["lineage"]["fallback"] = e.fallback
    line["search"] = {
        "score": e.score,
        "preference": e.preference,
        "success": e.success,
        "sent": e.sent,
        "response": e.response,
        "verdicts": e.verdicts,
    }
    if e.behaviour is not None:  # the request the judges read: the cell's dataset prompt
        line["search"]["judged_on"] = e.behaviour
    return line


def outcome_key(e: Elite) -> str:
    """How `aart attack` keys a prompt's outcome (the prompt, or [strategy] prompt)."""
    strategy = e.cell.get(STRATEGY_AXIS, IDENTITY)
    return e.prompt if strategy == IDENTITY else f"[{strategy}] {e.prompt}"


def rate(k: int, n: int) -> float:
    return k / n if n else 0.0


def summary(r: SearchResult) -> dict[str, Any]:
    """search.json's content."""
    a = r.archive
    elites = [a.elites[i] for i in sorted(a.elites)]
    successes = sum(1 for e in elites if e.success)
    cells = []
    for i, c in enumerate(a.cells):
        e = a.elites.get(i)
        cells.append(
            {
                "cell": c,
                "elite": e.id if e else None,
                "success": bool(e and e.success),
                "score": e.score if e else None,
                "queries_spent": a.spent[i],
                "queries_to_success": a.first_success.get(i),
            }
        )
    axes = r.spec.axes or sorted({k for c in a.cells for k in c} - {STRATEGY_AXIS})
    axis_won = {cell_key(_axes(e.cell)) for e in elites if e.success}
    return {
        "dataset": r.spec.dataset,
        "target": r.target,
        "primary_judge": r.primary,
        "measures": r.measures,
        "budget": r.spec.budget,
        "queries": r.queries,
        "iterations": r.iterations,
        "finished": r.finished,
        "stopped": r.stopped,
        "cells": len(a.cells),
        "cells_filled": len(elites),
        "cells_with_success": successes,
        "coverage": rate(successes, len(a.cells)),
        "success_per_query": rate(successes, r.queries),
        # the cells of the axes alone (every strategy together), as the baselines count
        "axis_cells": len({cell_key(_axes(c)) for c in a.cells}),
        "axis_cells_with_success": len(axis_won),
        "axes": axes,
        "strategies": r.spec.strategies,
        "pick": r.spec.pick,
        "seed": r.spec.seed,
        "parallel": r.spec.parallel,
        "rejected": r.rejected,
        "curve": [list(p) for p in r.curve],
        "per_cell": cells,
        "baselines": r.baselines,
        "warnings": r.warnings,
        "usage": r.usage,
    }


def write(r: SearchResult, out: Path) -> dict[str, Path]:
    """Every output of the search into ``out``; returns them by name."""
    a = r.archive
    elites = [a.elites[i] for i in sorted(a.elites)]
    won = [e for e in elites if e.success]
    paths = {
        "archive": out / "archive.jsonl",
        "regression": out / "regression.jsonl",
        "baseline": out / "attack.json",
        "summary": out / "search.json",
        "report": out / "report.html",
    }
    write_jsonl((archive_line(e) for e in elites), paths["archive"])
    failures = [{"id": e.id, "prompt": e.prompt, "cell": e.cell,
                 "strategy": e.cell.get(STRATEGY_AXIS, IDENTITY),
                 **({"case": e.case} if e.case else {})} for e in won]  # fmt: skip
    write_jsonl((RegressionRow.of(f).line() for f in failures), paths["regression"])
    # an unjudged elite is no pass: left out, as an attack leaves unjudged prompts out
    judged = [e for e in elites if e.score >= 0 and e.has_verdict(r.primary)]
    baseline = {
        "primary_judge": r.primary,
        "overall": {"rate": rate(len(won), len(judged)), "successes": len(won), "n": len(judged)},
        "outcomes": {outcome_key(e): e.success for e in judged},
        "written_by": "aart search",
    }
    paths["baseline"].write_text(json.dumps(baseline, indent=1), encoding="utf-8")
    s = summary(r)
    paths["summary"].write_text(json.dumps(s, indent=1, ensure_ascii=False), encoding="utf-8")
    paths["report"].write_text(report_html(r, s), encoding="utf-8")
    return paths


# -- the report --------------------------------------------------------------------------------
def coverage_svg(
    curve: list[list[int]] | list[tuple[int, int]],
    cells: int,
    points: dict[str, tuple[int, int]] | None = None,
    width: int = 640,
    height: int = 260,
) -> str:
    """Cells with a success over target queries, as a step line; ``points`` (the static
    baselines) as labelled markers at their queries."""
    pad_l, pad_b, pad_t, pad_r = 56, 30, 12, 110
    points = points or {}
    xs = [int(p[0]) for p in curve] + [q for q, _ in points.values()]
    max_x = max(xs + [1])
    max_y = max(cells, 1)
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def x(q: float) -> float:
        return pad_l + w * q / max_x

    def y(n: float) -> float:
        return pad_t + h * (1 - n / max_y)

    path = []
    last = 0
    for q, n in curve:
        path.append(f"{x(q):.1f},{y(last):.1f} {x(q):.1f},{y(n):.1f}")
        last = int(n)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        "role='img' aria-label='archive coverage over target queries'>",
        f"<line x1='{pad_l}' y1='{pad_t + h}' x2='{pad_l + w}' y2='{pad_t + h}' stroke='#999'/>",
        f"<line x1='{pad_l}' y1='{pad_t}' x2='{pad_l}' y2='{pad_t + h}' stroke='#999'/>",
        f"<text x='{pad_l + w / 2:.0f}' y='{height - 4}' text-anchor='middle'>target queries"
        "</text>",
        # the axis's name runs along it, clear of the ticks
        f"<text x='14' y='{pad_t + h / 2:.0f}' text-anchor='middle' "
        f"transform='rotate(-90 14 {pad_t + h / 2:.0f})'>cells with a success</text>",
        f"<text x='{pad_l - 4}' y='{y(max_y) + 4:.0f}' text-anchor='end'>{max_y}</text>",
        f"<text x='{pad_l - 4}' y='{y(0):.0f}' text-anchor='end'>0</text>",
        f"<text x='{x(0):.0f}' y='{pad_t + h + 14}' text-anchor='middle'>0</text>",
        f"<text x='{x(max_x):.0f}' y='{pad_t + h + 14}' text-anchor='middle'>{max_x}</text>",
        f"<polyline fill='none' stroke='#b00020' stroke-width='2' points='{' '.join(path)}'/>",
        f"<text x='{x(max_x) + 6:.0f}' y='{y(last) + 4:.0f}'>search ({last})</text>",
    ]
    colours = ["#1f5fa8", "#176f2c", "#7a4fa0"]
    for k, (name, (q, n)) in enumerate(sorted(points.items())):
        c = colours[k % len(colours)]
        parts.append(f"<circle cx='{x(q):.1f}' cy='{y(n):.1f}' r='4' fill='{c}'/>")
        parts.append(
            f"<text x='{x(q) + 6:.0f}' y='{y(n) + 14 + 12 * k:.0f}' fill='{c}'>"
            f"{esc(name)} ({n})</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _clip(text: str | None) -> str:
    t = text or ""
    return t if len(t) <= SHOWN else t[:SHOWN] + "…"


def report_html(r: SearchResult, s: dict[str, Any]) -> str:
    a = r.archive
    measures = r.measures
    body = [f"<h1>aart search on {esc(r.target)}</h1>"]
    if not r.finished:
        body.append(
            f"<p class='gap'><b>Unfinished:</b> {esc(r.stopped)}. Re-run the same command to "
            "resume.</p>"
        )
    if r.primary == "refusal":
        body.append(
            "<p class='muted'>Judged by the refusal detector alone: a success here is a reply "
            "that complied (was not refused), not necessarily a harmful one: give --judge "
            "for a judge of harm.</p>"
        )
    for w in r.warnings:
        body.append(f"<p class='gap'>WARNING: {esc(w)}</p>")
    body.append(
        "<div>"
        f"<span class='kpi'><b>{s['cells_with_success']} / {s['cells']}</b>cells with a "
        f"success ({esc(measures)})</span>"
        f"<span class='kpi'><b>{s['queries']}</b>target queries (budget {s['budget']})</span>"
        f"<span class='kpi'><b>{s['success_per_query']:.3f}</b>cells with a success per "
        "query</span>"
        "</div>"
    )
    points = {
        name: (int(b["queries"]), int(b["cells_with_success"]))
        for name, b in r.baselines.items()
        if "queries" in b
    }
    body.append("<h2>Archive coverage over target queries</h2>")
    body.append(coverage_svg(s["curve"], len(a.cells), points))
    if r.baselines:
        body.append(f"<h2>Against the static baselines, given the same budget ({s['budget']})</h2>")
        n = s["axis_cells"]
        won = s["axis_cells_with_success"]
        rows = [["search (archive)", s["queries"], f"{won}/{n}",
                 _pct(s["cells_with_success"], s["cells_filled"]),
                 f"{rate(won, s['queries']):.3f}"]]  # fmt: skip
        for name, b in r.baselines.items():
            if "error" in b:
                rows.append([name, "-", "-", f"not run: {b['error']}", "-"])
                continue
            rows.append([name, b["queries"], f"{b['cells_with_success']}/{n}",
                         _pct(b["successes"], b["judged"]),
                         f"{rate(b['cells_with_success'], b['queries']):.3f}"])  # fmt: skip
        body.append(
            table(
                [
                    "method",
                    "target queries",
                    "cells with a success",
                    f"{measures} (of prompts judged)",
                    "cells with a success per query",
                ],
                rows,
            )  # fmt: skip
        )
        body.append(
            "<p class='muted'>Cells here are those of the axes (every strategy together). The "
            "archive's rate is over its elites (one per cell, the best found); the "
            "baselines' over every prompt they sent.</p>"
        )
        # a baseline that ran out of prompts (or whose PAIR chains all ended early) spent less:
        # its per-query figure is not one at the same spend
        fewer = [
            f"{esc(name)} spent {b['queries']} of its {s['budget']} queries"
            for name, b in r.baselines.items()
            if "queries" in b and s["budget"] and int(b["queries"]) < int(s["budget"])
        ]
        if fewer:
            body.append(
                f"<p class='muted'>{'; '.join(fewer)}: the dataset holds no more prompts, or "
                "every chain ended early.</p>"
            )
    body.append("<h2>Cells</h2>")
    rows = []
    for c in s["per_cell"]:
        label = ", ".join(f"{k}={v}" for k, v in c["cell"].items())
        # a cell the budget never reached is untested, not one where the application held
        said = "yes" if c["success"] else "no" if c["queries_spent"] else "untested"
        rows.append([label, said, c["queries_spent"],
                     c["queries_to_success"] if c["queries_to_success"] is not None else "-",
                     c["elite"] or "-"])  # fmt: skip
    body.append(table(["cell", "success", "queries spent on it", "search queries at its "
                       "first success", "elite"], rows, numeric_from=2))  # fmt: skip
    body.append("<h2>Elites</h2>")
    for i in sorted(a.elites):
        e = a.elites[i]
        label = ", ".join(f"{k}={v}" for k, v in e.cell.items())
        state = "<span class='gap'>success</span>" if e.success else "<span>no success</span>"
        body.append(
            f"<h3>{esc(label)}: {state}</h3>"
            f"<p class='muted'>{esc(e.id)} from {esc(e.parent)} by {esc(e.mutation)}, "
            f"iteration {e.iteration}, score {e.score:g}</p>"
            f"<pre>{esc(_clip(e.sent))}</pre><p>reply:</p><pre>{esc(_clip(e.response))}</pre>"
        )
    return page(f"aart search: {r.target}", "".join(body))


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * rate(k, n):.0f}%)" if n else "-"
