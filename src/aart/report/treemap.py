"""A squarified treemap as inline SVG (Bruls, Huizing and van Wijk, 2000), laid out here: no
script, no library, nothing fetched. Used for the topic distribution of each dataset, as the
AART paper's appendix D compares datasets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .html import esc

Rect = tuple[float, float, float, float]  # x, y, width, height

#: fill colours, in order of size (colour-blind safe: Okabe-Ito and Tableau tints)
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#86bcb6",
    "#a0cbe8",
    "#ffbe7d",
    "#8cd17d",
    "#f1ce63",
    "#d4a6c8",
)
OTHER_FILL = "#bab0ac"


def shared_colours(labels: Sequence[str], other: str = "other") -> dict[str, str]:
    """One colour per label, in the order given (the palette repeats past its length)."""
    distinct = [x for x in dict.fromkeys(labels) if x != other]
    return {x: PALETTE[i % len(PALETTE)] for i, x in enumerate(distinct)}


def _ink(fill: str) -> str:
    """Dark text on light fills, white on dark ones (relative luminance)."""
    r, g, b = (int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return "#222" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "#fff"


def _worst(row: Sequence[float], side: float) -> float:
    """The worst aspect ratio of a row of areas laid along a side of this length."""
    s = sum(row)
    return max(max(side * side * a / (s * s), s * s / (side * side * a)) for a in row)


def squarify(values: Sequence[float], x: float, y: float, w: float, h: float) -> list[Rect]:
    """Rectangles tiling (x, y, w, h), one per value (positive, largest first for the best
    aspect ratios), each with an area proportional to its value."""
    total = float(sum(values))
    if total <= 0 or w <= 0 or h <= 0:
        return [(x, y, 0.0, 0.0) for _ in values]
    areas = [v * w * h / total for v in values]
    rects: list[Rect] = []
    i = 0
    while i < len(areas):
        side = min(w, h)
        row = [areas[i]]
        i += 1
        # grow the row while that does not worsen its aspect ratio
        while i < len(areas) and _worst([*row, areas[i]], side) <= _worst(row, side):
            row.append(areas[i])
            i += 1
        s = sum(row)
        if w >= h:  # a column along the left edge
            cw = s / h
            yy = y
            for a in row:
                rects.append((x, yy, cw, a / cw))
                yy += a / cw
            x, w = x + cw, w - cw
        else:  # a row along the top edge
            rh = s / w
            xx = x
            for a in row:
                rects.append((xx, y, a / rh, rh))
                xx += a / rh
            y, h = y + rh, h - rh
    return rects


def treemap_svg(
    items: Sequence[tuple[str, int]],
    *,
    title: str,
    width: int = 520,
    height: int = 320,
    other: str = "other",
    colours: Mapping[str, str] | None = None,
) -> str:
    """An SVG treemap of (label, count), every label escaped, a tooltip (``<title>``) per
    rectangle and a text label where it fits. ``colours`` keeps a label's colour the same
    across several treemaps (see :func:`shared_colours`); else colours go by size."""
    items = sorted(((k, v) for k, v in items if v > 0), key=lambda kv: -kv[1])
    total = sum(v for _, v in items)
    rects = squarify([v for _, v in items], 0, 0, width, height)
    parts = [
        f"<svg width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='{esc(title)}'>"
        f"<title>{esc(title)}</title>"
    ]
    for i, ((label, count), (x, y, w, h)) in enumerate(zip(items, rects, strict=True)):
        fill = OTHER_FILL if label == other else PALETTE[i % len(PALETTE)]
        if colours and label in colours:
            fill = colours[label]
        tip = f"{label}: {count} ({100 * count / total:.1f}%)"
        parts.append(
            f"<g class='tm'><title>{esc(tip)}</title>"
            f"<rect x='{x:.3f}' y='{y:.3f}' width='{w:.3f}' height='{h:.3f}' "
            f"fill='{fill}' stroke='#fff' stroke-width='1' data-count='{count}'/>"
        )
        chars = int((w - 6) / 6.2)  # about 6 px per 11 px character
        ink = f"style='fill:{_ink(fill)}'"  # a style: the page's CSS outranks attributes
        if h >= 15 and chars >= 3:
            name = label if len(label) <= chars else label[: max(1, chars - 1)] + "…"
            parts.append(f"<text x='{x + 3:.1f}' y='{y + 13:.1f}' {ink}>{esc(name)}</text>")
            if h >= 28:
                share = f"{100 * count / total:.1f}%"
                parts.append(f"<text x='{x + 3:.1f}' y='{y + 25:.1f}' {ink}>{share}</text>")
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
