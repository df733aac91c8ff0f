"""Plots drawn on the server as SVG: one element per data point, gaps where nothing was
measured, and nothing from the data is taken as markup."""

import re
from datetime import UTC, datetime, timedelta

from videocopies.adapters.http.control.plots import bar_plot, line_plot, nice_ceiling
from videocopies.application.control import Point, Series

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


def _points(values: list[float | None]) -> tuple[Point, ...]:
    return tuple(Point(T0 + timedelta(minutes=i), v) for i, v in enumerate(values))


def test_the_axis_ends_at_a_round_number() -> None:
    assert [nice_ceiling(v) for v in (0, 0.4, 3, 7, 12, 99, 101)] == [1, 1, 5, 10, 20, 100, 200]


def test_a_bar_per_minute_that_had_copies() -> None:
    svg = str(bar_plot(Series("copies", _points([0, 3, 0, 5])), "throughput", "t", "copies/min"))
    assert svg.startswith("<svg") and 'data-plot="throughput"' in svg
    assert re.findall(r'class="point"[^>]*data-value="([^"]+)"', svg) == ["3", "5"]
    heights = [float(h) for h in re.findall(r'class="point"[^>]*height="([^"]+)"', svg)]
    assert heights[1] > heights[0] > 0


def test_a_line_is_broken_where_a_minute_has_no_value() -> None:
    svg = str(line_plot([Series("p50", _points([1, 2, None, 4, 5])), Series("p95", _points([2, 3, None, 8, 9]))],
                        "latency", "t", "seconds"))
    assert svg.count('class="point"') == 8
    assert svg.count("<polyline") == 4  # two runs per series
    assert 'data-series="p95"' in svg and 'data-value="9"' in svg


def test_an_empty_hour_draws_an_empty_frame() -> None:
    svg = str(line_plot([Series("p50", _points([None] * 60))], "latency", "t", "s"))
    assert "<svg" in svg and 'class="point"' not in svg


def test_names_are_escaped() -> None:
    svg = str(bar_plot(Series("<b>", _points([1])), 'x"y', "<title>", "<u>"))
    assert "<b>" not in svg and "<u>" not in svg and 'x"y' not in svg
