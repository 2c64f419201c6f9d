"""Charts as inline SVG, drawn on the server: no chart library, nothing fetched at run time.

`line_chart` draws one or more series over shared x labels (dates, run names); every label
is escaped, so a run or agent named `<script>` draws as text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from html import escape

from markupsafe import Markup

PALETTE = ("#2f5fd0", "#0f7b5f", "#b54708", "#7a3fb0", "#c11574", "#475467")


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float | None]  # one per x label; None: no point there


def _nice_top(value: float) -> float:
    """The axis top: four grid steps of 1, 2, 2.5 or 5 times a power of ten, so every tick
    label is a round number (38 draws to 40 with ticks at 10, 20, 30)."""
    if value <= 0:
        return 1.0
    quarter = value / 4
    power = 10.0 ** math.floor(math.log10(quarter))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= quarter - 1e-12:
            return 4 * step * power
    return 40 * power


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value < 10 else f"{value:,.0f}"


def date_labels(times: list[datetime]) -> list[str]:
    """Labels for an axis of moments, as short as they can be and still tell the points
    apart: the day (`2026-12-02`), with the time when two points share a day (`12-02 10:15`)."""
    days = [t.date() for t in times]
    if len(set(days)) < len(days):
        return [f"{t:%m-%d %H:%M}" for t in times]
    return [f"{t:%Y-%m-%d}" for t in times]


def line_chart(
    labels: list[str],
    series: list[Series],
    *,
    title: str,
    width: int = 720,
    height: int = 240,
    top: float | None = None,
    max_labels: int = 10,
    tips: list[str] | None = None,
) -> Markup:
    """An SVG line chart (Markup: safe to put in a template as is). `top`: the y axis's
    maximum (e.g. 1.0 for a rate); by default a round number above the largest value.
    `max_labels`: how many x labels at most, spread evenly from the first to the last.
    `tips`: what each x position is (a run's name), put before the value in each point's tooltip."""
    left, right, upper, lower = 56, 16, 28, 44
    plot_w, plot_h = width - left - right, height - upper - lower
    values = [v for s in series for v in s.values if v is not None]
    y_top = top if top is not None else _nice_top(max(values, default=1.0))
    n = len(labels)

    def x(i: int) -> float:
        return left + (plot_w * (i + 0.5) / n if n else 0)

    def y(v: float) -> float:
        return upper + plot_h * (1 - min(max(v / y_top, 0), 1))

    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for k in range(5):  # grid lines and y labels
        v = y_top * k / 4
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e6ea"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{_number(v)}</text>')
    many = max(2, max_labels)
    shown = set(range(n)) if n <= many else {round(j * (n - 1) / (many - 1)) for j in range(many)}
    for i, label in enumerate(labels):
        if i in shown:
            text = label[:16]
            half = 3.3 * len(text)  # 11 px text is about 6.6 px a character: keep the label inside
            cx = min(max(x(i), 4 + half), width - 4 - half)
            parts.append(f'<text x="{cx:.1f}" y="{height - lower + 16}" text-anchor="middle">{escape(text)}</text>')
    for j, s in enumerate(series):
        color = PALETTE[j % len(PALETTE)]
        points = [(x(i), y(v)) for i, v in enumerate(s.values) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for i, value in enumerate(s.values):
            if value is None:
                continue
            px, py = x(i), y(value)
            where = f"{escape(tips[i])} · " if tips else ""
            tip = f"<title>{where}{escape(s.name)}: {_number(value)}</title>"
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}">{tip}</circle>')
        lx = left + j * 150
        parts.append(f'<rect x="{lx}" y="8" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{lx + 14}" y="17">{escape(s.name[:22])}</text>')
    if not values:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">no data yet</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
