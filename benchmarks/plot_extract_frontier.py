"""The extraction speed/quality frontier as an SVG (no plotting library in the environment): pages per
CPU-second (log scale) against mean token F1 and against snippet accuracy, one point per method, from the
--json output of benchmarks/bench_extract.py.

    python benchmarks/plot_extract_frontier.py RESULTS.json OUT.svg [--held-out-f1 0.905]

--held-out-f1: resiliparse-blocks' leave-one-dataset-out F1 (bench_extract --held-out-model), plotted
instead of its in-sample F1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from html import escape
from pathlib import Path

FONT = 'font-family="Helvetica, Arial, sans-serif" font-size="11"'


def panel(points: list[tuple[str, float, float]], y_label: str, left: int, y_range: tuple[float, float]) -> list[str]:
    width, height, top = 330, 240, 30
    x_low, x_high = math.log10(20), math.log10(1000)
    y_low, y_high = y_range

    def x(speed: float) -> float:
        return left + 50 + (math.log10(speed) - x_low) / (x_high - x_low) * (width - 60)

    def y(value: float) -> float:
        return top + (y_high - value) / (y_high - y_low) * height

    parts = [
        f'<rect x="{left + 50}" y="{top}" width="{width - 60}" height="{height}" fill="none" stroke="#999"/>',
        f'<text x="{left + 50}" y="{top - 8}" {FONT}>{escape(y_label)}</text>',
        f'<text x="{left + 50}" y="{top + height + 30}" {FONT}>pages per CPU-second (log scale)</text>',
    ]
    for tick in (20, 50, 100, 200, 500, 1000):
        parts.append(f'<text x="{x(tick) - 8:.0f}" y="{top + height + 14}" {FONT}>{tick}</text>')
    steps = round((y_high - y_low) / 0.02)
    for i in range(steps + 1):
        value = y_low + 0.02 * i
        parts.append(f'<text x="{left + 14}" y="{y(value) + 4:.0f}" {FONT}>{value:.2f}</text>')
        parts.append(
            f'<line x1="{left + 50}" x2="{left + width - 10}" y1="{y(value):.0f}" y2="{y(value):.0f}" stroke="#eee"/>'
        )
    for name, speed, value in points:
        color = "#c03d3e" if name.startswith("resiliparse-blocks") else "#3b75af"
        parts.append(f'<circle cx="{x(speed):.1f}" cy="{y(value):.1f}" r="4" fill="{color}"/>')
        parts.append(f'<text x="{x(speed) + 6:.1f}" y="{y(value) - 5:.1f}" {FONT}>{escape(name)}</text>')
    return parts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--held-out-f1", type=float, default=None)
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    f1_points, snippet_points = [], []
    for r in results:
        every = [s[2] for scores in r["scores"].values() for s in scores]
        f1 = sum(every) / len(every)
        name = r["method"]
        if name == "resiliparse-blocks" and args.held_out_f1 is not None:
            f1, name = args.held_out_f1, "resiliparse-blocks (held out)"
        f1_points.append((name, r["pages_per_cpu_s"], f1))
        snippet_points.append((r["method"], r["pages_per_cpu_s"], r["snippet_accuracy"]))
    parts = panel(f1_points, "mean token F1 (1,280 pages)", 0, (0.84, 0.94))
    parts += panel(snippet_points, "snippet accuracy (trafilatura_eval)", 360, (0.82, 0.94))
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="720" height="310" viewBox="0 0 720 310">'
        '<rect width="720" height="310" fill="white"/>' + "".join(parts) + "</svg>\n"
    )
    args.out.write_text(svg, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
