"""Bar charts as small SVG documents, for the run report: no plotting library, the page stays one file."""

from __future__ import annotations

import base64
from html import escape

COLORS = ["#3b75af", "#e1812c", "#3a923a", "#c03d3e", "#9372b2", "#845b53"]
FONT = 'font-family="Helvetica, Arial, sans-serif" font-size="12"'
SMALL = 'font-family="Helvetica, Arial, sans-serif" font-size="10"'


def _number(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"


def _legend(series: list[str], x: int, y: int) -> list[str]:
    parts = []
    for i, name in enumerate(series):
        parts.append(
            f'<rect x="{x}" y="{y + 16 * i}" width="10" height="10" fill="{COLORS[i % len(COLORS)]}"/>'
            f'<text x="{x + 14}" y="{y + 16 * i + 9}" {FONT}>{escape(name)}</text>'
        )
    return parts


def hbars(
    title: str, labels: list[str], series: dict[str, list[float]], *, stacked: bool = False, unit: str = ""
) -> str:
    """Horizontal bars, one row per label, one bar per series (stacked or side by side)."""
    names = list(series)
    label_width = min(300, 16 + 7 * max((len(label) for label in labels), default=4))
    bar_area = 300
    per_row = 18 if stacked or len(names) == 1 else 10 * len(names) + 6
    height = 40 + per_row * max(len(labels), 1) + (16 * len(names) + 6 if len(names) > 1 else 0)
    width = label_width + bar_area + 90
    totals = [
        sum(values[i] for values in series.values()) if stacked else max(values[i] for values in series.values())
        for i in range(len(labels))
    ]
    top = max(totals, default=0) or 1
    parts = [f'<text x="8" y="20" {FONT} font-weight="bold">{escape(title)}</text>']
    if not labels:
        parts.append(f'<text x="8" y="48" {FONT}>no data</text>')
    for row, label in enumerate(labels):
        y = 32 + row * per_row
        parts.append(
            f'<text x="{label_width - 6}" y="{y + per_row / 2 + 3:.0f}" text-anchor="end" {FONT}>{escape(label)}</text>'
        )
        x: float = label_width
        for i, name in enumerate(names):
            value = series[name][row]
            w = bar_area * value / top
            bar_y = y + 2 if stacked or len(names) == 1 else y + 2 + 10 * i
            bar_h = per_row - 4 if stacked or len(names) == 1 else 9
            tip = f"{escape(name)}: {_number(value)}{unit}"
            parts.append(
                f'<rect x="{x:.1f}" y="{bar_y}" width="{w:.1f}" height="{bar_h}" '
                f'fill="{COLORS[i % len(COLORS)]}"><title>{tip}</title></rect>'
            )
            if stacked:
                x += w
            elif len(names) > 1:
                parts.append(f'<text x="{x + w + 4:.1f}" y="{bar_y + 8}" {SMALL}>{_number(value)}</text>')
        if stacked or len(names) == 1:
            parts.append(
                f'<text x="{x + (0 if stacked else bar_area * totals[row] / top) + 4:.1f}" '
                f'y="{y + per_row / 2 + 3:.0f}" {FONT}>{_number(totals[row])}{unit}</text>'
            )
    if len(names) > 1:
        parts += _legend(names, label_width, 36 + per_row * len(labels))
    return _document(width, height, parts)


def histogram(title: str, edges: list[float], counts: list[int], x_label: str) -> str:
    """Vertical bars over bins [edges[i], edges[i + 1])."""
    width, height, left, bottom, plot_w, plot_h = 500, 250, 50, 210, 430, 160
    top = max(counts, default=0) or 1
    parts = [
        f'<text x="8" y="20" {FONT} font-weight="bold">{escape(title)}</text>',
        f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w}" y2="{bottom}" stroke="#444"/>',
        f'<text x="{left - 6}" y="{bottom - plot_h + 4}" text-anchor="end" {FONT}>{top:,}</text>',
        f'<text x="{left - 6}" y="{bottom}" text-anchor="end" {FONT}>0</text>',
        f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle" {FONT}>{escape(x_label)}</text>',
    ]
    if not counts:
        parts.append(f'<text x="{left + 10}" y="{bottom - 20}" {FONT}>no data</text>')
    n = max(len(counts), 1)
    for i, count in enumerate(counts):
        h = plot_h * count / top
        x = left + plot_w * i / n
        tip = f"[{_number(edges[i])}, {_number(edges[i + 1])}): {count:,}"
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{bottom - h:.1f}" width="{plot_w / n - 2:.1f}" height="{h:.1f}" '
            f'fill="{COLORS[0]}"><title>{tip}</title></rect>'
        )
    for i in range(0, len(edges), max(1, len(edges) // 6)):
        x = left + plot_w * i / n
        parts.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle" {SMALL}>{_number(edges[i])}</text>')
    return _document(width, height, parts)


def _document(width: int, height: float, parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
        f'viewBox="0 0 {width} {height:.0f}"><rect width="100%" height="100%" fill="white"/>'
        + "".join(parts)
        + "</svg>"
    )


def img(svg: str, alt: str) -> str:
    """An <img> holding the SVG as a data URI: an image the browser decodes, and the page stays one file."""
    data = base64.b64encode(svg.encode()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/svg+xml;base64,{data}">'
