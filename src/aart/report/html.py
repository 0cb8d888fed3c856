"""Building blocks for self-contained HTML reports. Every piece of dataset or model text goes
through :func:`esc`: generated text is untrusted data."""

from __future__ import annotations

import html
from collections.abc import Sequence

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.num{text-align:right;font-variant-numeric:tabular-nums}
.gap{color:#b00020}.ok{color:#176f2c}.muted{color:#777}.kpi{display:inline-block;margin:0 1.5rem .5rem 0}
.kpi b{display:block;font-size:1.3rem}pre{white-space:pre-wrap;background:#f8f8f8;padding:.5rem;border-radius:4px}
/* untrusted text (a base64 prompt, a long value) wraps instead of widening the page */
pre,p,li,td,.muted{overflow-wrap:anywhere}td.num{white-space:nowrap}th{overflow-wrap:break-word}tbody th{overflow-wrap:anywhere;min-width:8rem}
svg text{font:11px system-ui,sans-serif;fill:#333}
.wide{overflow-x:auto;max-width:100%}
.untested{background:repeating-linear-gradient(45deg,#eee,#eee 3px,#fff 3px,#fff 6px);color:#999;text-align:center}
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        # No external fetches of any kind: the report must open offline and leak nothing.
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>{body}</body></html>"
    )


def table(header: Sequence[str], rows: Sequence[Sequence[object]], numeric_from: int = 1) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='num'>{esc(c)}</td>" if i >= numeric_from else f"<td>{esc(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    # a wide table scrolls inside its box instead of pushing the page sideways
    return f"<div class='wide'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def hbar_chart(
    items: Sequence[tuple[str, float]],
    *,
    width: int = 640,
    bar_h: int = 14,
    highlight_zero: bool = True,
    fmt: str = "{:g}",
) -> str:
    """Horizontal bars, one per (label, value); zero bars are drawn as red gap markers."""
    if not items:
        return "<p class='muted'>nothing to show</p>"
    label_w = 250
    top = max(v for _, v in items) or 1
    h = bar_h + 4
    parts = [f"<svg width='{width}' height='{h * len(items) + 4}' role='img'>"]
    for i, (label, v) in enumerate(items):
        y = i * h + 2
        w = (width - label_w - 60) * v / top
        color = "#b00020" if highlight_zero and v == 0 else "#3b6ea8"
        parts.append(
            f"<text x='{label_w - 6}' y='{y + bar_h - 3}' text-anchor='end'>{esc(_short(label))}</text>"
            f"<rect x='{label_w}' y='{y}' width='{max(w, 2 if v == 0 else w):.1f}' height='{bar_h}' fill='{color}'>"
            f"<title>{esc(label)}: {esc(fmt.format(v))}</title></rect>"
            f"<text x='{label_w + w + 4:.1f}' y='{y + bar_h - 3}'>{esc(fmt.format(v))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _short(label: str, width: int = 38) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def histogram_chart(
    edges: Sequence[float],
    counts: Sequence[int],
    *,
    width: int = 640,
    height: int = 160,
    xlabel: str = "",
) -> str:
    if not counts:
        return "<p class='muted'>nothing to show</p>"
    top = max(counts) or 1
    bw = (width - 40) / len(counts)
    parts = [f"<svg width='{width}' height='{height + 30}' role='img'>"]
    for i, c in enumerate(counts):
        bh = (height - 10) * c / top
        parts.append(
            f"<rect x='{30 + i * bw:.1f}' y='{height - bh:.1f}' width='{bw - 1:.1f}' height='{bh:.1f}' fill='#3b6ea8'>"
            f"<title>{esc(f'{edges[i]:.0f}-{edges[i + 1]:.0f}: {c}')}</title></rect>"
        )
    parts.append(f"<text x='30' y='{height + 14}'>{esc(f'{edges[0]:.0f}')}</text>")
    parts.append(
        f"<text x='{width - 10}' y='{height + 14}' text-anchor='end'>{esc(f'{edges[-1]:.0f}')}</text>"
    )
    parts.append(
        f"<text x='{width / 2}' y='{height + 28}' text-anchor='middle'>{esc(xlabel)}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)
