"""The evaluation report: per-axis value counts and gaps, concentration, length histogram and
the comparison table, in HTML and Markdown."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..evaluate.evaluation import METRIC_LEGEND
from ..types import DatasetEvaluation, Evaluation, Table
from .html import esc, hbar_chart, histogram_chart, page, table
from .markdown import md_escape, md_table
from .treemap import shared_colours, treemap_svg

#: never-matched values listed in the terminal (Markdown); the HTML and JSON list them all
SHOW_VALUES = 8


#: the Diversity table's names for the evaluation's keys
DIVERSITY_NAMES = {
    "distinct_1": "distinct-1 (share of distinct words)",
    "distinct_2": "distinct-2 (share of distinct word pairs)",
    "distinct_3": "distinct-3 (share of distinct word triples)",
    "self_bleu": "self-BLEU (overlap with the other prompts)",
    "lexical_diversity": "lexical diversity",
    "vendi_lexical": "Vendi score, lexical (effective number of prompts)",
    "exact_duplicate_rate": "exact duplicate rate",
    "near_duplicate_rate": "near duplicate rate",
    "embedding_diversity": "embedding diversity (mean cosine distance)",
    "vendi_embedding": "Vendi score, embeddings",
    "nn_similarity": "mean nearest-neighbour similarity (word pairs)",
    "nn_group": "prompts per nearest-neighbour group",
}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _some(values: list[str], n: int = SHOW_VALUES) -> str:
    """A count and a few examples: the whole list can run to hundreds of values."""
    head = ", ".join(values[:n])
    return f"{len(values)}: {head}" + (f", ... (+{len(values) - n})" if len(values) > n else "")


def gaps(ev: Evaluation) -> list[tuple[str, str, int, int, list[str]]]:
    """(dataset, axis, never matched, values, the values) for every axis with a gap."""
    return [
        (r.name, axis, len(c["never_matched"]), c["values"], c["never_matched"])
        for r in ev.datasets
        for axis, c in r.coverage.items()
        if c["never_matched"]
    ]


def _dataset_html(r: DatasetEvaluation) -> str:
    out = [f"<h2>{esc(r.name)}</h2>"]
    w = r.length["words"]
    d = r.diversity
    kpis = [
        ("prompts", r.prompts),
        ("words / prompt", f"{w.get('mean', 0):.1f} ± {w.get('std', 0):.1f}"),
        ("distinct-2", f"{d['distinct_2']:.3f}"),
        ("self-BLEU", f"{d['self_bleu']:.3f}"),
    ]
    if d.get("embedding_diversity") is not None:
        kpis.append(("embedding diversity", f"{d['embedding_diversity']:.3f}"))
    out.append("".join(f"<span class='kpi'>{esc(k)}<b>{esc(v)}</b></span>" for k, v in kpis))
    for note in r.notes:
        out.append(f"<p class='muted'>{esc(note)}</p>")
    for axis, c in r.coverage.items():
        gaps = c["never_matched"]
        out.append(f"<h3>Coverage: {esc(axis)}</h3>")
        out.append(
            f"<p>{c['values']} values; {c['presence']:.3f} mentions per prompt; "
            f"{_pct(c['prompt_share'])} of prompts mention one; top-5 share {_pct(c['top5_share'])}; "
            f"evenness {c['evenness']:.3f}; <span class='{'gap' if gaps else 'ok'}'>"
            f"{len(gaps)} never matched</span>, {len(c['matched_once'])} matched once.</p>"
        )
        out.append(hbar_chart(list(c["counts"].items())))
        if gaps:
            out.append(f"<p class='gap'>Never matched: {esc(', '.join(gaps))}</p>")
    for axis, dist in r.annotations.items():
        out.append(f"<h3>Annotated {esc(axis)}</h3>")
        out.append(
            f"<p>{dist['distinct']} distinct values over {dist['records']} records; top-5 share "
            f"{_pct(dist['top5_share'])}; {len(dist['singletons'])} appear once; evenness {dist['evenness']:.3f}.</p>"
        )
        out.append(hbar_chart(list(dist["counts"].items())[:40]))
    if r.agreement:
        rows = [
            [a, *(_agreement_cell(g.get(k)) for k in AGREEMENT_KINDS)]
            for a, g in r.agreement.items()
        ]
        out.append("<h3>Agreement: is the record's value found in its prompt?</h3>")
        out.append(
            "<p class='muted'>Keyword match with aliases and inflections. The paper's human "
            "reviewers found the policy concept in 99.2%, the region in 96.7% and the task "
            "format in 85.0% of prompts.</p>"
        )
        out.append(
            table(
                ["axis", "cell value in prompt", "annotated value in prompt", "annotation = cell"],
                rows,
            )
        )
    header, rows = language_rows(r)
    if rows:
        out.append("<h3>Coverage per language</h3>")
        out.append(
            "<p class='muted'>Values counted through their names in each language (Step 1's "
            "names); a prompt restating the English words does not count.</p>"
        )
        out.append(table(header, rows))
    h = r.length["words_histogram"]
    out.append("<h3>Length (words)</h3>")
    out.append(histogram_chart(h["edges"], h["counts"], xlabel="words per prompt"))
    out.append(table(["", *w.keys()], [["words", *[f"{v:.1f}" for v in w.values()]]]))
    div_rows = [
        [
            DIVERSITY_NAMES.get(k, k),
            "n/a" if v is None else str(v) if isinstance(v, int) else f"{v:.4f}",
        ]
        for k, v in d.items()
    ]
    out.append("<h3>Diversity</h3>" + table(["metric", "value"], div_rows))
    return "".join(out)


AGREEMENT_KINDS = ("cell", "annotation", "annotation_matches_cell")


def language_rows(r: DatasetEvaluation) -> tuple[list[str], list[list[Any]]]:
    """Coverage per language (a multilingual dataset): prompts, the share written in the
    language, and per axis the share of prompts naming a value in that language."""
    by = r.coverage_by_language or {}
    first: dict[str, Any] = next(iter(by.values()), {})
    axes = list(first.get("coverage", {}))
    rows = [
        [
            f"{lang} ({x['name']})",
            x["prompts"],
            "-" if x["in_language"] is None else _pct(x["in_language"]),
            # a language without prompts names nothing: no share to give
            *(_pct(x["coverage"][a]["prompt_share"]) if x["prompts"] else "-" for a in axes),
        ]
        for lang, x in by.items()
    ]
    return ["language", "prompts", "written in it", *(f"{a} named" for a in axes)], rows


def diversity_lines(ev: Evaluation) -> list[str]:
    """The Gaps section's diversity flags: "<dataset>: <what>"."""
    return [f"{g.dataset}: {g.text}" for g in ev.diversity_gaps]


def _agreement_cell(g: Mapping[str, Any] | None) -> str:
    return "-" if not g else f"{g['agree']}/{g['checked']} ({_pct(g['rate'])})"


def comparison_table(t: Table) -> str:
    """The comparison turned a quarter: a row per measure, a column per dataset. A column
    per measure (16, and one more per axis) is wider than the page, and scrolled; a few
    datasets side by side fit a 1280 px window."""
    names = [str(r[0]) for r in t.rows]
    rows = [[h, *(r[i] for r in t.rows)] for i, h in enumerate(t.header) if i]
    return table(["measure", *names], rows)


def evaluation_html(ev: Evaluation, title: str = "aart evaluation") -> str:
    t = ev.table
    found = gaps(ev)
    summary = (
        "".join(
            f"<p class='gap'><b>{esc(name)}</b>: {n} of {total} {esc(axis)} values never "
            f"matched ({esc(_some(vals))})</p>"
            for name, axis, n, total, vals in found
        )
        if found
        else "<p class='ok'>Every value of every axis is mentioned at least once.</p>"
    )
    summary += "".join(f"<p class='gap'>{esc(x)}</p>" for x in diversity_lines(ev))
    body = [
        f"<h1>{esc(title)}</h1>",
        f"<p class='muted'>Coverage is keyword-based (values from {esc(ev.values_from)}); "
        "it underestimates, since keywords miss implicit mentions.</p>",
        "<h2>Gaps</h2>",
        summary,
        "<h2>Comparison</h2>",
        comparison_table(t),
        f"<p class='muted'>{esc(METRIC_LEGEND)}</p>",
    ]
    body.append(topics_html(ev))
    if ev.human_review:
        body.append(_human_html(ev.human_review))
    body += [_dataset_html(r) for r in ev.datasets]
    return page(title, "".join(body))


def _human_lines(h: Mapping[str, Any]) -> list[str]:
    g = h["good"]
    lines = [
        f"good adversarial tests: {g['good']}/{g['n']}"
        + (
            f" = {_pct(g['rate'])} [{_pct(g['ci_low'])}, {_pct(g['ci_high'])}] (the paper's "
            "reviewers: 92.5%)"
            if g["rate"] is not None
            else ""
        )
    ]
    for dim, f in h["dimensions"].items():
        if f["n"]:
            lines.append(
                f"{dim} matches its value: {f['matches']}/{f['n']} = {_pct(f['rate'])}"
                + (f" ({f['not_judged']} not judged)" if f.get("not_judged") else "")
            )
    if h["paper"]:  # only the paper's axes that the recipe has
        lines.append(
            "the paper's reviewers: " + ", ".join(f"{k} {_pct(v)}" for k, v in h["paper"].items())
        )
    for a in h["reviewer_agreement"]:
        k = "-" if a["kappa"] is None else f"{a['kappa']:.2f}".replace("-0.00", "0.00")
        lines.append(f"reviewers {' vs '.join(a['reviewers'])}: kappa {k} (n={a['n']})")
    return lines


def _human_html(h: Mapping[str, Any]) -> str:
    return "<h2>Human review</h2>" + "".join(f"<p>{esc(x)}</p>" for x in _human_lines(h))


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join(md_table(header, rows))


def evaluation_markdown(ev: Evaluation, title: str = "aart evaluation") -> str:
    t = ev.table
    out = [
        f"# {title}",
        "",
        f"Keyword coverage against values from {ev.values_from}.",
        "",
        "## Gaps",
        "",
        *(
            [
                f"- **{md_escape(name)}**: {n} of {total} {md_escape(axis)} values never "
                f"matched ({md_escape(_some(vals))})"
                for name, axis, n, total, vals in gaps(ev)
            ]
            or ["- every value of every axis is mentioned at least once"]
        ),
        *[f"- **low diversity**: {md_escape(x)}" for x in diversity_lines(ev)],
        "",
        "## Comparison",
        "",
        _md_table(t.header, t.rows),
        "",
        METRIC_LEGEND,
        "",
        *topics_markdown(ev),
    ]
    if ev.human_review:
        out += [
            "## Human review",
            "",
            *[f"- {md_escape(x)}" for x in _human_lines(ev.human_review)],
            "",
        ]
    for r in ev.datasets:
        out += [f"## {md_escape(r.name)}", ""]
        rows = [
            [
                a,
                c["values"],
                f"{c['presence']:.3f}",
                _pct(c["prompt_share"]),
                _pct(c["top5_share"]),
                f"{c['evenness']:.3f}",
                len(c["never_matched"]),
                len(c["matched_once"]),
            ]
            for a, c in r.coverage.items()
        ]
        out += [
            _md_table(
                [
                    "axis",
                    "values",
                    "mentions/prompt",
                    "prompts",
                    "top-5 share",
                    "evenness",
                    "never matched",
                    "matched once",
                ],
                rows,
            ),
            "",
        ]
        for a, c in r.coverage.items():
            if c["never_matched"]:
                out.append(f"- never matched ({a}): {md_escape(_some(c['never_matched']))}")
        for a, dist in r.annotations.items():
            top = md_escape(
                ", ".join(f"{x['value']} {x['count']} ({_pct(x['share'])})" for x in dist["top"])
            )
            out.append(
                f"- annotated {a}: {dist['distinct']} distinct; top: {top}; "
                f"{len(dist['singletons'])} singletons"
            )
        for a, g in r.agreement.items():
            parts = [
                f"{label} {_agreement_cell(g[k])}"
                for k, label in zip(
                    AGREEMENT_KINDS, ("cell", "annotation", "annotation=cell"), strict=True
                )
                if g.get(k)
            ]
            out.append(f"- agreement {a}: {'; '.join(parts)}")
        header, rows = language_rows(r)
        if rows:
            out += ["", "Coverage per language (values named in the language):", ""]
            out += [_md_table(header, [[str(x) for x in row] for row in rows]), ""]
        w = r.length["words"]
        if w.get("n"):
            out.append(
                f"- length: {w['mean']:.2f} ± {w['std']:.2f} words (median {w['median']:.0f}, "
                f"min {w['min']:.0f}, max {w['max']:.0f})"
            )
        for note in r.notes:
            out.append(f"- note: {note}")
        out.append("")
    return "\n".join(out)


# -- topics (appendix D of the paper): one treemap per dataset, see evaluate/topics.py --

TOPICS_LEGEND = (
    "Each prompt gets one topic; H is the Shannon entropy of the topic labels (nats), "
    "exp(H) the effective number of topics (↑ more topical diversity); other: no topic close "
    "enough."
)


#: two treemaps side by side in the page's 1100 px
TREEMAP_WIDTH = 500


def _topic_figures(t: Mapping[str, Any]) -> str:
    return (
        f"{t['topics_used']} of {t['topics']} topics used; H {t['entropy']:.2f} nats; "
        f"exp(H) {t['effective_topics']:.1f}; other {_pct(t['other_share'])}; "
        f"by {t['method']}"
    )


def topics_html(ev: Evaluation) -> str:
    """The Topics section: a treemap per dataset, side by side, with its figures."""
    with_topics = [(r, r.topics) for r in ev.datasets if r.topics]
    if not with_topics:
        return ""
    out = [
        "<h2>Topics</h2>",
        f"<p class='muted'>Topics from {esc(with_topics[0][1]['topics_from'])}. "
        f"{esc(TOPICS_LEGEND)}</p>",
        "<div style='display:flex;flex-wrap:wrap;gap:1rem'>",
    ]
    # a topic keeps its colour from one dataset's treemap to the next
    colours = shared_colours([k for _, t in with_topics for k in t["counts"]])
    for r, t in with_topics:
        out.append(
            f"<figure style='margin:0;width:{TREEMAP_WIDTH}px'>"
            + treemap_svg(
                list(t["counts"].items()),
                title=f"topics of {r.name}",
                width=TREEMAP_WIDTH,
                colours=colours,
            )
            + f"<figcaption><b>{esc(r.name)}</b>: {esc(_topic_figures(t))}</figcaption>"
            "</figure>"
        )
    out.append("</div>")
    for r, t in with_topics:
        rows = [[k, v, _pct(t["shares"][k])] for k, v in t["counts"].items()]
        out.append(
            f"<details><summary>{esc(r.name)}: topic counts</summary>"
            + table(["topic", "prompts", "share"], rows)
            + "</details>"
        )
    return "".join(out)


def topics_markdown(ev: Evaluation, top: int = 8) -> list[str]:
    """The Topics section: each dataset's figures and its largest topics."""
    with_topics = [(r, r.topics) for r in ev.datasets if r.topics]
    if not with_topics:
        return []
    out = [
        "## Topics",
        "",
        f"Topics from {md_escape(with_topics[0][1]['topics_from'])}. {TOPICS_LEGEND}",
        "",
    ]
    for r, t in with_topics:
        largest = ", ".join(f"{k} {_pct(v)}" for k, v in list(t["shares"].items())[:top])
        out.append(
            f"- **{md_escape(r.name)}**: {md_escape(_topic_figures(t))}; "
            f"largest: {md_escape(largest)}"
        )
    return [*out, ""]


def write_evaluation_report(ev: Evaluation, out: str | Path) -> dict[str, Path]:
    """Write OUT.html, OUT.md and OUT.json (OUT without suffix): the JSON is
    :meth:`Evaluation.as_dict`, serialised here (the evaluation's storage boundary)."""
    import json

    stem = Path(out)
    if stem.suffix in (".html", ".md", ".json"):
        stem = stem.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {
        "html": stem.with_suffix(".html"),
        "md": stem.with_suffix(".md"),
        "json": stem.with_suffix(".json"),
    }
    paths["html"].write_text(evaluation_html(ev), encoding="utf-8")
    paths["md"].write_text(evaluation_markdown(ev), encoding="utf-8")
    paths["json"].write_text(json.dumps(ev.as_dict(), indent=1, default=str), encoding="utf-8")
    return paths
