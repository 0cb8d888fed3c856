"""The attack report: overall rate, rates per axis value and per pair of axes (worst first,
with Wilson intervals), judge agreement, and failing examples; HTML, Markdown and JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.export import write_json
from ..redteam.findings import Comparison, Findings
from ..redteam.judge_accuracy import BUILT_IN
from ..redteam.records import AttackRecord
from ..redteam.results import outcome_words
from .html import esc, page, table
from .markdown import md_escape, md_table
from .usage import calls_text, cost_text

MAX_EXAMPLES = 25


def _rate(c: Mapping[str, Any]) -> str:
    if not c["n"]:
        return "n/a (nothing judged)"
    return f"{100 * c['rate']:.1f}% [{100 * c['ci_low']:.1f}, {100 * c['ci_high']:.1f}]"


def refusal_text(f: Findings) -> str:
    """The refusal rate, or n/a when no reply was judged (0% would read as "never refused")."""
    return f"{100 * f.refusal_rate:.1f}%" if f.judged else "n/a"


def _color(cell: Mapping[str, Any]) -> str:
    """White to red by the Wilson lower bound, so 1/1 is pale and 12/12 is deep red; a
    tested cell with no failure is pale green."""
    if cell["successes"] == 0:
        return "rgb(232,246,232)"
    g = int(255 * (1 - cell["ci_low"]))
    return f"rgb(255,{g},{g})"


def _heatmap(
    cells: Sequence[Mapping[str, Any]],
    a: str,
    b: str,
    untested_a: Sequence[str] = (),
    untested_b: Sequence[str] = (),
    count: str = "failures",
) -> str:
    rows = sorted({c["a"] for c in cells}) + list(untested_a)
    cols = sorted({c["b"] for c in cells}) + list(untested_b)
    by = {(c["a"], c["b"]): c for c in cells}
    head = (
        "<tr><th>"
        + esc(f"{a} \\ {b}")
        + "</th>"
        + "".join(f"<th>{esc(c)}</th>" for c in cols)
        + "</tr>"
    )
    body = []
    for r in rows:
        tds = []
        for c in cols:
            cell = by.get((r, c))
            if cell is None:
                tds.append("<td class='untested' title='not tested'>&middot;</td>")
            else:
                tds.append(
                    f"<td class='num' style='background:{_color(cell)}' "
                    f"title='{esc(_rate(cell))}'>{cell['successes']}/{cell['n']}</td>"
                )
        body.append(f"<tr><th>{esc(r)}</th>{''.join(tds)}</tr>")
    legend = (
        f"<p class='muted'>{esc(count)} / prompts; red by the lower end of the 95% interval "
        f"(1/1 is pale, 12/12 deep); green: tested, no {'failure' if count == 'failures' else 'reply that complied'}; &middot;: not tested</p>"
    )
    return f"<div class='wide'><table>{head}{''.join(body)}</table></div>{legend}"


def _example_html(r: dict[str, Any], primary: str) -> str:
    """One failing prompt: what was sent under its strategy, the reply, the verdict; a
    refinement chain or a multi-turn transcript folded below."""
    verdict = AttackRecord.read(r).verdict(primary)  # a failure: a judged record
    axes = "; ".join(f"{k}: {val}" for k, val in r["cell"].items())
    out = [
        f"<h3>{esc(r['id'])}</h3><p class='muted'>{esc(axes)}</p>",
        f"<p><b>prompt</b></p><pre>{esc(r['prompt'])}</pre>",
    ]
    if r.get("sent") and r["sent"] != r["prompt"]:
        out.append(f"<p><b>sent ({esc(r.get('strategy', ''))})</b></p><pre>{esc(r['sent'])}</pre>")
    out.append(f"<p><b>response</b></p><pre>{esc(r['response'])}</pre>")
    if r.get("case"):
        out.append(_actions_html(r))
    if r.get("response_english"):
        out.append(
            f"<p><b>response, back-translated</b></p><pre>{esc(r['response_english'])}</pre>"
        )
    if r.get("chain"):
        steps = "".join(
            f"<p><b>round {c['round']}</b> ({'violates' if c['violates'] else 'safe'}): "
            f"{esc(c['rationale'])}</p><pre>{esc(c['sent'])}</pre><pre>{esc(c['response'])}</pre>"
            for c in r["chain"]
        )
        out.append(
            f"<details><summary>refinement chain, {len(r['chain'])} rounds</summary>{steps}</details>"
        )
    if r.get("transcript"):
        turns = "".join(
            f"<p><b>user</b></p><pre>{esc(t['user'])}</pre><p><b>assistant</b></p>"
            f"<pre>{esc(t['assistant'])}</pre>"
            for t in r["transcript"]
        )
        out.append(
            f"<details><summary>conversation, {len(r['transcript'])} turns</summary>{turns}</details>"
        )
    score = verdict.score
    out.append(
        f"<p class='muted'>{esc(verdict.category or '')} "
        + (f"score {score:.2f} " if score is not None and ":" in primary else "")
        + f"{esc(verdict.rationale or '')}</p>"
    )
    return "".join(out)


def _actions_html(r: dict[str, Any]) -> str:
    """An injection case's trace: the user's task, the tools the target called (every
    argument escaped, like every other text of the target's) and the criteria that fired."""
    case = r["case"]
    calls = r.get("tool_calls") or []
    shown = "".join(
        f"<pre>{esc(c.get('name', ''))}({esc(json.dumps(c.get('arguments') or {}, ensure_ascii=False)[:2000])})</pre>"
        for c in calls[:20]
    )
    fired = ", ".join(r.get("criteria") or []) or "none"
    task = "" if r.get("utility") is None else (" (done)" if r["utility"] else " (not done)")
    return (
        f"<p><b>user task{esc(task)}</b></p><pre>{esc(case.get('user_task', ''))}</pre>"
        f"<p><b>tool calls ({len(calls)}, {esc(str(r.get('steps') or 1))} steps); criteria that "
        f"fired: {esc(fired)}</b></p>{shown or '<p class=muted>none</p>'}"
    )


def agent_line(agent: Mapping[str, Any]) -> str:
    """An attack on injection cases in a sentence: utility, and success with the task done
    (over the cases that say how to tell the task was done; none say: "not checked", never
    a 0/0 or a success rate that counts the unchecked cases as the task undone)."""
    u, s = agent["utility"], agent["success_with_task_done"]
    out = f"{agent['cases']} injection cases; "
    if not u["n"]:
        out += "the user's task not checked (no case has a utility criterion)"
    else:
        of = (
            "" if u["n"] == agent["cases"] else f" (of the {u['n']} cases with a utility criterion)"
        )
        out += (
            f"the user's task still done in {u['successes']}/{u['n']} "
            f"({100 * u['rate']:.1f}%){of}; attack success with the task still done "
            f"{s['successes']}/{s['n']} ({100 * s['rate']:.1f}%)"
        )
    if agent.get("criteria"):
        out += "; criteria that fired: " + ", ".join(
            f"{k} {v}" for k, v in agent["criteria"].items()
        )
    if agent.get("max_steps_reached"):
        out += f"; {agent['max_steps_reached']} stopped at --max-steps"
    return out


def plural(n: int, word: str) -> str:
    """ "1 call", "2 calls"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def state_line(f: Findings) -> str:
    """How every answered prompt ended, unjudged and empty replies included: the
    denominator, with nothing dropped silently."""
    words = outcome_words(f.harm_judged)
    answered = sum(f.states.values())
    parts = [f"{f.states[k]} {w}" for k, w in words.items() if f.states.get(k)]
    return f"{answered} answered: " + (", ".join(parts) or "none")


def headline(f: Findings) -> str:
    """The rate, named for what it measures."""
    o = f.overall
    return f"{f.measures} {o['successes']}/{o['n']} = {_rate(o)} (judge {f.primary_judge})"


def people_line(f: Findings) -> str | None:
    """What the people's verdicts (`aart review --attack`) say of the answers they labelled,
    beside the judge's rate: the figure the corrected rate estimates."""
    p = (f.calibration or {}).get("people")
    if not p or not p["n"]:
        return None
    answered = sum(f.states.values())
    return (
        f"{p['successes']}/{p['n']} labelled answers violate = {100 * p['rate']:.1f}% "
        f"[{100 * p['ci_low']:.1f}, {100 * p['ci_high']:.1f}] by people's verdicts "
        f"(aart review --attack; {p['n']} of {answered} answered labelled, 'unsure' left out)"
    )


def corrected_line(f: Findings) -> str | None:
    c = f.corrected
    if not c or not f.overall["n"]:
        return None
    if c.get("source") == BUILT_IN["action"].source:
        return None  # a deterministic check: the headline is the rate, nothing to correct
    point = "-" if c["rate"] is None else f"{100 * c['rate']:.1f}%"
    return (
        f"{point} [{100 * c['ci_low']:.1f}, {100 * c['ci_high']:.1f}] corrected for the "
        f"judge's error (sensitivity {c['sensitivity']:.2f}, specificity "
        f"{c['specificity']:.2f}; {c['source']})"
    )


def worst_case_line(f: Findings) -> str | None:
    w = f.worst_case
    if not w or not f.unjudged:
        return None
    return (
        f"with the {f.unjudged} unjudged counted as successes: {w['successes']}/{w['n']} = "
        f"{100 * w['rate']:.1f}%"
    )


def honest_note(f: Findings) -> str | None:
    """Said whenever the refusal detector alone decided the rate."""
    if f.harm_judged:
        return None
    return (
        "No judge of harm was configured: this rate counts replies that did not refuse. A "
        "non-refusal is not necessarily a violation (a safe, helpful answer complies too). "
        "For an attack-success rate add --judge MODEL (the policy rubric), harmbench:MODEL "
        "or strongreject:MODEL."
    )


def pair_line(pair: Mapping[str, Any]) -> str:
    """PAIR's figures in words: chains, successes by round, queries per success."""
    rounds = ", ".join(f"round {k}: {v}" for k, v in pair["success_by_round"].items())
    qps = pair.get("queries_per_success")
    return (
        f"{pair['successes']}/{pair['chains']} chains succeeded"
        + (f" ({rounds})" if rounds else "")
        + f", {pair['queries']} target queries, "
        + (f"{qps:.1f} queries per success" if qps else "no success")
    )


def _corr(c: Mapping[str, Any]) -> str:
    if "corrected_low" not in c:
        return "-"
    point = "-" if c.get("corrected") is None else f"{100 * c['corrected']:.1f}%"
    return f"{point} [{100 * c['corrected_low']:.1f}, {100 * c['corrected_high']:.1f}]"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _corr_overall(c: Mapping[str, Any]) -> str:
    point = "-" if c["rate"] is None else f"{100 * c['rate']:.1f}%"
    return f"{point} [{100 * c['ci_low']:.1f}, {100 * c['ci_high']:.1f}]"


def _by_severity(f: Findings) -> list[dict[str, Any]]:
    def severity(r: dict[str, Any]) -> int:
        return AttackRecord.read(r).verdict(f.primary_judge).severity or 0

    return sorted(f.failures, key=lambda r: (-severity(r), str(r["id"])))


def _comparison_ids(c: Comparison) -> list[tuple[str, list[str]]]:
    return [
        (label, ids)
        for label, ids in (
            ("fixed", c.fixed),
            ("still failing", c.still_failing),
            ("newly failing", c.newly_failing),
        )
        if ids
    ]


def _inconclusive(f: Findings) -> str:
    stopped = f"stopped early, {f.stopped}; " if f.stopped else ""
    return (
        f"INCONCLUSIVE: {stopped}only {f.judged} of {f.prompts} prompts were judged "
        f"({100 * f.judged_share:.0f}%, below the {100 * f.min_judged:.0f}% required); "
        f"{plural(len(f.failed_jobs), 'failed call')}, {plural(f.target_errors, 'target error')} and "
        f"{f.unjudged} unjudged answers. The attack-"
        "success rate below proves nothing."
    )


def attack_html(f: Findings) -> str:
    o = f.overall
    corr = f.corrected
    note = honest_note(f)
    parts = [
        f"<h1>aart attack: {esc(f.target)}</h1>",
        f"<p class='gap'><b>{esc(_inconclusive(f))}</b></p>" if f.inconclusive else "",
        "".join(f"<p class='gap'><b>WARNING: {esc(w)}</b></p>" for w in f.warnings),
        f"<p class='gap'><b>{esc(note)}</b></p>" if note else "",
        f"<p class='muted'>dataset {esc(f.dataset)}; primary judge {esc(f.primary_judge)}; "
        f"judges: {esc(', '.join(f.judges))}</p>",
        "".join(
            f"<span class='kpi'>{esc(k)}<b>{esc(v)}</b></span>"
            for k, v in [
                (f.measures, f"{o['successes']}/{o['n']} = {_rate(o)}"),
                *([("corrected for judge error", _corr_overall(corr))] if corr and o["n"] else []),
                *(
                    [("unjudged as successes", f"{100 * f.worst_case['rate']:.1f}%")]
                    if f.worst_case and f.unjudged
                    else []
                ),
                ("judged", f"{f.judged} of {f.prompts}"),
                *((f"unjudged ({j})", n) for j, n in f.unjudged_by_judge.items()),
                ("target errors", f.target_errors),
                ("failed calls", len(f.failed_jobs)),
                ("cost", f"{cost_text(f.usage)} ({calls_text(f.usage)})"),
                ("refusal rate", refusal_text(f)),
            ]
        ),
        f"<p class='muted'>{esc(state_line(f))}</p>",
        f"<p class='muted'>{esc(corrected_line(f) or '')}</p>" if corrected_line(f) else "",
        f"<p class='muted'>{esc(people_line(f) or '')}</p>" if people_line(f) else "",
        "".join(
            f"<p class='muted'>{esc(j)}: mean score {sc['mean']:.2f} over {sc['n']}</p>"
            for j, sc in f.scores.items()
        ),
    ]
    if f.agent:
        parts.append(f"<h2>Agent actions</h2><p>{esc(agent_line(f.agent))}</p>")
        if f.agent.get("tool_calls"):
            parts.append(
                table(["tool", "calls"], [[k, v] for k, v in f.agent["tool_calls"].items()])
            )
    pair = f.strategy_stats.get("pair")
    if pair:
        parts.append(f"<h2>PAIR</h2><p>{esc(pair_line(pair))}</p>")
    if f.comparison:
        c = f.comparison
        parts.append(
            "<h2>Since the previous run</h2>"
            + table(
                [
                    "previous",
                    "previous rate",
                    "compared",
                    "fixed",
                    "still failing",
                    "newly failing",
                ],
                [
                    [
                        c.previous,
                        f"{100 * c.previous_rate:.1f}%",
                        c.compared,
                        len(c.fixed),
                        len(c.still_failing),
                        len(c.newly_failing),
                    ]
                ],
            )
            + "".join(
                f"<p><b>{esc(label)}</b>: {esc(', '.join(ids))}</p>"
                for label, ids in _comparison_ids(c)
            )
        )
    # the refusal detector grades nothing: its examples are in the dataset's order
    shown = (
        "Replies that did not refuse"
        if not f.harm_judged
        else "Failing examples, most severe first"
    )
    parts.append(f"<h2>{shown} ({min(len(f.failures), MAX_EXAMPLES)} of {len(f.failures)})</h2>")
    parts += [_example_html(r, f.primary_judge) for r in _by_severity(f)[:MAX_EXAMPLES]]
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    for r in _by_severity(f):
        if r.get("strategy", "identity") != "identity":
            by_strategy.setdefault(r["strategy"], []).append(r)
    if by_strategy:
        parts.append("<h2>Examples by strategy</h2>")
        for label, recs in sorted(by_strategy.items()):
            parts.append(f"<h3>{esc(label)} ({len(recs)} failing)</h3>")
            parts += [_example_html(r, f.primary_judge) for r in recs[:3]]
    for title, values in _unattacked(f):
        parts.append(
            f"<h2>{esc(title)}</h2>"
            + "".join(
                f"<p><b>{esc(axis)}</b> ({len(vals)}): {esc(', '.join(vals[:20]))}"
                + (" ..." if len(vals) > 20 else "")
                + "</p>"
                for axis, vals in values.items()
            )
        )
    for axis, cells in f.by_value.items():
        parts.append(f"<h2>By {esc(axis)} (worst first)</h2>")
        parts.append(
            table(
                ["value", f"{_count_word(f)} / n", "rate [95% CI]", "corrected [95%]"],
                [[c["value"], f"{c['successes']}/{c['n']}", _rate(c), _corr(c)] for c in cells],
            )
        )
    for pair, cells in f.by_pair.items():
        a, b = pair.split(" x ")
        parts.append(f"<h2>{esc(pair)}</h2>")
        if len({c["a"] for c in cells}) <= 40 and len({c["b"] for c in cells}) <= 30:
            parts.append(
                _heatmap(cells, a, b, f.untested.get(a, []), f.untested.get(b, []), _count_word(f))
            )
        parts.append(
            "<h3>Worst cells</h3>"
            + table(
                ["cell", f"{_count_word(f)} / n", "rate [95% CI]", "corrected [95%]"],
                [
                    [c["value"], f"{c['successes']}/{c['n']}", _rate(c), _corr(c)]
                    for c in cells[:15]
                ],
            )
        )
    if f.calibration:
        rows = [
            [j, c["n"], *(_num(c[k]) for k in ("precision", "recall", "agreement", "kappa"))]
            for j, c in f.calibration["judges"].items()
        ]
        parts.append(
            f"<h2>Judge calibration against people ({f.calibration['labelled']} human "
            "verdicts)</h2>"
            + table(["judge", "n", "precision", "recall", "agreement", "Cohen's kappa"], rows)
        )
    if f.judge_accuracy:
        parts.append(
            "<h2>Judge accuracy used for the corrected rates</h2>"
            + table(["judge", "applies to", "sensitivity", "specificity", "source"],
                    _accuracy_rows(f))
        )  # fmt: skip
    if f.agreement:
        parts.append(
            "<h2>Judge agreement</h2>"
            + table(
                ["judges", "n", "agreement", "Cohen's kappa"],
                [
                    [
                        " vs ".join(a["judges"]),
                        a["n"],
                        "-" if a["agreement"] is None else f"{100 * a['agreement']:.1f}%",
                        "-" if a["kappa"] is None else f"{a['kappa']:.2f}",
                    ]
                    for a in f.agreement
                ],
            )
        )
    if f.gate.get("rules"):
        parts.append("<h2>Gate</h2>" + table(["rule", "outcome"], _gate_rows(f), 2))
    if f.settings:
        parts.append(
            "<h2>Settings</h2>" + table(["setting", "value", "from"], _settings_rows(f), 3)
        )
    return page(f"aart attack: {f.target}", "".join(parts))


def _accuracy_rows(f: Findings) -> list[list[Any]]:
    rows = []
    for j, acc in f.judge_accuracy.items():
        for where, a in [("overall", acc["overall"]), *acc.get("per_value", {}).items()]:
            rows.append(
                [j, where, f"{a['sensitivity']:.2f}", f"{a['specificity']:.2f}", a["source"]]
            )
    return rows


def _count_word(f: Findings) -> str:
    return "failures" if f.harm_judged else "complied"


def _md_rate_table(
    title: str, label: str, cells: Sequence[Mapping[str, Any]], count: str = "failures"
) -> list[str]:
    rows = [[c["value"], f"{c['successes']}/{c['n']}", _rate(c), _corr(c)] for c in cells]
    return [
        "",
        f"## {md_escape(title)}",
        "",
        *md_table([label, f"{count} / n", "rate [95% CI]", "corrected [95%]"], rows),
    ]


def _unattacked(f: Findings) -> list[tuple[str, dict[str, list[str]]]]:
    """The values no attacked prompt had: those the dataset should have covered, and apart
    those the run's scope filtered out on purpose."""
    out = []
    if f.untested:
        out.append(("Never attacked", f.untested))
    if f.filtered_out:
        out.append(("Filtered out by scope (never planned, on purpose)", f.filtered_out))
    return out


def _md_unattacked(f: Findings) -> list[str]:
    lines: list[str] = []
    for title, values in _unattacked(f):
        lines += ["", f"## {md_escape(title)}", ""]
        lines += [
            f"- **{md_escape(axis)}** ({len(vals)}): {md_escape(', '.join(vals[:20]))}"
            + (" ..." if len(vals) > 20 else "")
            for axis, vals in values.items()
        ]
    return lines


#: the longest system prompt excerpt a report shows (its length and hash identify it)
PROMPT_EXCERPT = 200


def _shown(key: str, value: Any) -> str:
    if key == "system_prompt":
        if not value:
            return "(none sent)"
        import hashlib

        digest = hashlib.sha256(str(value).encode()).hexdigest()[:12]
        text = str(value)
        cut = text[:PROMPT_EXCERPT] + ("..." if len(text) > PROMPT_EXCERPT else "")
        return f"{cut!r} ({len(text)} chars, sha256 {digest})"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return "-" if value is None else str(value)


def _settings_rows(f: Findings) -> list[list[Any]]:
    """Every attack setting, its value and where it came from (flag, recipe, default)."""
    return [[k, _shown(k, s["value"]), s["source"]] for k, s in f.settings.items()]


def _gate_rows(f: Findings) -> list[list[Any]]:
    return [
        [
            r["name"],
            ("FAILED: " if r["failed"] else "skipped: " if r.get("skipped") else "passed: ")
            + r["message"],
        ]
        for r in f.gate.get("rules", [])
    ]


def attack_markdown(f: Findings) -> str:
    note = honest_note(f)
    corrected = corrected_line(f)
    worst = worst_case_line(f)
    lines = [
        f"# aart attack: {md_escape(f.target)}",
        "",
        *([f"**{md_escape(_inconclusive(f))}**", ""] if f.inconclusive else []),
        *[f"**WARNING: {md_escape(w)}**\n" for w in f.warnings],
        *([f"**{md_escape(note)}**", ""] if note else []),
        f"- {md_escape(headline(f))}",
        *([f"- {md_escape(corrected)}"] if corrected else []),
        *([f"- {md_escape(people_line(f) or '')}"] if people_line(f) else []),
        *([f"- {md_escape(worst)}"] if worst else []),
        f"- {md_escape(state_line(f))}",
        f"- prompts {f.prompts}, judged {f.judged}, unjudged {f.unjudged}, "
        f"target errors {f.target_errors}, failed calls {len(f.failed_jobs)}, "
        f"refusal rate {refusal_text(f)}",
        "- unjudged by judge: "
        + ", ".join(f"{md_escape(j)} {n}" for j, n in f.unjudged_by_judge.items()),
        f"- cost {md_escape(cost_text(f.usage))} for {calls_text(f.usage)}",
        *(
            f"- {md_escape(j)}: mean score {sc['mean']:.2f} over {sc['n']}"
            for j, sc in f.scores.items()
        ),
        *(
            [f"- pair: {md_escape(pair_line(pair))}"]
            if (pair := f.strategy_stats.get("pair"))
            else []
        ),
        *([f"- agent: {md_escape(agent_line(f.agent))}"] if f.agent else []),
    ]
    if f.comparison:
        c = f.comparison
        lines.append(
            f"- since {c.previous} ({100 * c.previous_rate:.1f}%, judge {c.judge}): "
            f"{len(c.fixed)} fixed, {len(c.still_failing)} still failing, "
            f"{len(c.newly_failing)} newly failing"
        )
        lines += [f"  - {label}: {md_escape(', '.join(ids))}" for label, ids in _comparison_ids(c)]
    count = _count_word(f)
    for axis, cells in f.by_value.items():
        lines += _md_rate_table(f"By {axis} (worst first)", "value", cells[:20], count)
    for pair_axes, cells in f.by_pair.items():
        lines += _md_rate_table(f"Worst {pair_axes} cells", "cell", cells[:10], count)
    lines += _md_unattacked(f)
    lines += _md_examples(f)
    if f.calibration:
        lines += ["", f"## Judge calibration ({f.calibration['labelled']} human verdicts)", ""]
        lines += md_table(
            ["judge", "n", "precision", "recall", "agreement", "kappa"],
            [
                [j, c["n"], *(_num(c[k]) for k in ("precision", "recall", "agreement", "kappa"))]
                for j, c in f.calibration["judges"].items()
            ],
        )
    if f.judge_accuracy:
        lines += ["", "## Judge accuracy used for the corrected rates", ""]
        lines += md_table(
            ["judge", "applies to", "sensitivity", "specificity", "source"], _accuracy_rows(f)
        )
        lines.append("")
    for a in f.agreement:
        if a["agreement"] is not None:
            lines.append(
                f"- agreement {' vs '.join(a['judges'])}: {100 * a['agreement']:.1f}% "
                f"(kappa {a['kappa']:.2f}, n={a['n']})"
            )
    if f.gate.get("rules"):
        lines += ["", "## Gate", ""] + md_table(["rule", "outcome"], _gate_rows(f))
    if f.settings:
        lines += ["", "## Settings", ""]
        lines += md_table(["setting", "value", "from"], _settings_rows(f))
    return "\n".join(lines) + "\n"


#: the failing examples report.md shows (report.html shows MAX_EXAMPLES), and how much of a
#: prompt and a reply each: a summary for a CI comment, the whole texts are in results.jsonl
MD_EXAMPLES = 10
MD_TEXT = 240


def _outcome(v: Any) -> str:
    """A failure's verdict in a few words: how the reply ended, or the harm judge's say."""
    if v.status:
        return str(v.status)
    return "violates" + (f", severity {v.severity}" if v.severity else "")


def _md_examples(f: Findings) -> list[str]:
    """The first failing examples, as report.html orders them, each text cut to MD_TEXT."""
    if not f.failures:
        return []

    def cut(text: str | None) -> str:
        t = " ".join((text or "").split())
        return t if len(t) <= MD_TEXT else t[:MD_TEXT] + " ..."

    title = (
        "Replies that did not refuse"
        if not f.harm_judged
        else "Failing examples, most severe first"
    )
    shown = _by_severity(f)[:MD_EXAMPLES]
    rows = [
        [
            r["id"],
            "; ".join(f"{k}: {v}" for k, v in r["cell"].items()),
            cut(r.get("sent") or r["prompt"]),
            cut(r.get("response")),
            _outcome(AttackRecord.read(r).verdict(f.primary_judge)),
        ]
        for r in shown
    ]
    return [
        "",
        f"## {title} ({len(shown)} of {len(f.failures)}; every verdict in results.jsonl)",
        "",
        *md_table(["id", "cell", "sent", "response", "outcome"], rows),
    ]


def attack_summary(f: Findings) -> dict[str, Any]:
    """What attack.json (and `aart attack --json`) holds: the findings without the records."""
    return {k: v for k, v in f.as_dict().items() if k not in ("failures", "unjudged_records")}


def write_attack_report(f: Findings, out: Path) -> dict[str, Path]:
    paths = {"html": out / "report.html", "md": out / "report.md", "json": out / "attack.json"}
    paths["html"].write_text(attack_html(f), encoding="utf-8")
    paths["md"].write_text(attack_markdown(f), encoding="utf-8")
    write_json(attack_summary(f), paths["json"], indent=1)
    return paths
