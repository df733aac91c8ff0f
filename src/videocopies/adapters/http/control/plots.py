"""Plots as inline SVG, drawn on the server: no script, no plotting library, and every
data point is an element a browser test can find (`.point` with data-minute/data-value)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

from videocopies.application.control import Point, Series

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 24, 30
COLOURS = ("#2563eb", "#dc2626", "#059669")


def nice_ceiling(value: float) -> float:
    """The axis top: 1, 2 or 5 times a power of ten, at or above `value` (at least 1)."""
    if value <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def _frame(points: Sequence[Point], top: float, unit: str, name: str, title: str) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg class="plot" data-plot="{escape(name)}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#f8fafc" stroke="#cbd5e1"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#e2e8f0"/>')
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{_number(top * fraction)}</text>'
        )
    parts.append(f'<text x="{LEFT}" y="{TOP - 8}" font-size="11" fill="#475569">{escape(unit)}</text>')
    if points:
        for index in (0, len(points) // 2, len(points) - 1):
            x = _x(index, len(points))
            label = points[index].minute.strftime("%H:%M")
            parts.append(f'<text x="{x:.1f}" y="{HEIGHT - 10}" text-anchor="middle" font-size="11">{label}</text>')
    return parts


def _x(index: int, count: int) -> float:
    plot_w = WIDTH - LEFT - RIGHT
    return LEFT + plot_w * (index + 0.5) / max(count, 1)


def _y(value: float, top: float) -> float:
    plot_h = HEIGHT - TOP - BOTTOM
    return TOP + plot_h * (1 - value / top)


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def _point_data(series: str, point: Point) -> str:
    return f'data-series="{escape(series)}" data-minute="{point.minute.isoformat()}" data-value="{point.value:g}"'


def bar_plot(series: Series, name: str, title: str, unit: str) -> Markup:
    """One bar per minute; a minute with nothing in it has no bar."""
    points = series.points
    top = nice_ceiling(max((p.value or 0.0 for p in points), default=0.0))
    parts = _frame(points, top, unit, name, title)
    bar_w = max((WIDTH - LEFT - RIGHT) / max(len(points), 1) - 2, 1)
    for index, point in enumerate(points):
        if not point.value:
            continue
        y = _y(point.value, top)
        parts.append(
            f'<rect class="point" {_point_data(series.name, point)} x="{_x(index, len(points)) - bar_w / 2:.1f}" '
            f'y="{y:.1f}" width="{bar_w:.1f}" height="{HEIGHT - BOTTOM - y:.1f}" fill="{COLOURS[0]}">'
            f"<title>{point.minute:%H:%M} {_number(point.value)} {escape(series.name)}</title></rect>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def line_plot(all_series: Sequence[Series], name: str, title: str, unit: str) -> Markup:
    """One line per series, broken where a minute has no value."""
    count = max((len(s.points) for s in all_series), default=0)
    top = nice_ceiling(max((p.value for s in all_series for p in s.points if p.value is not None), default=0.0))
    parts = _frame(all_series[0].points if all_series else (), top, unit, name, title)
    for colour, series in zip(COLOURS, all_series, strict=False):
        run: list[str] = []
        for index, point in enumerate([*series.points, Point(series.points[-1].minute, None)] if series.points else []):
            if point.value is None:
                if len(run) > 1:
                    parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(run)}"/>')
                run = []
                continue
            x, y = _x(index, count), _y(point.value, top)
            run.append(f"{x:.1f},{y:.1f}")
            parts.append(
                f'<circle class="point" {_point_data(series.name, point)} cx="{x:.1f}" cy="{y:.1f}" r="3" '
                f'fill="{colour}"><title>{point.minute:%H:%M} {escape(series.name)} '
                f"{_number(point.value)} {escape(unit)}</title></circle>"
            )
    for offset, (colour, series) in enumerate(zip(COLOURS, all_series, strict=False)):
        x = LEFT + 10 + offset * 70
        parts.append(f'<rect x="{x}" y="{TOP + 6}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{TOP + 15}" font-size="11">{escape(series.name)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
