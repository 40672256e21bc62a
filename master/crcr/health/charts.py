"""The backend page's charts over time, as SVG drawn here on the server: the pages work without internet.

Hand-written rather than a library: the three charts are one line or bar chart each, over at most 30 buckets, and
what they need (axes, ticks, a title, a legend, a point per value with its figure as a tooltip) is about as much
code as wiring in a plotting package, which would be the relay's heaviest dependency (matplotlib pulls in numpy;
pygal and the small JavaScript libraries would need vendoring and keeping up to date). Pure: no Buildbot, no
Twisted; it draws from the "series" of RelayHealth's backend answer (see docs/health.md):

    {"bucket_seconds": 3600 | 86400, "buckets": [{"start", "decided", "p50", "p95", "pass_rate", "builds",
                                                  "queue"}, ...]}   # oldest first
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from crcr.health.percentages import percent

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 44, 44  # the plot area's margins: y ticks, title and legend, x labels
MAX_X_LABELS = 8
Y_TICKS = 5  # about this many
ZERO_BAR = 2  # pixels: a bucket whose value is 0 still shows a bar, unlike one with no value
NO_DATA = "no data in this range"
# (unit, seconds): a latency axis counts in the largest unit its highest value reaches at least twice.
DURATION_UNITS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
COLOURS = {"p50": "#1f77b4", "p95": "#ff7f0e", "pass rate": "#2ca02c", "queue": "#6f42c1"}


@dataclass(frozen=True)
class Series:
    name: str  # the legend's and the tooltips' word for it
    values: list[float | None]  # one per bucket; None: nothing to show for that bucket (a gap)
    colour: str


@dataclass(frozen=True)
class Axis:
    top: float  # the y axis runs from 0 to top, a tick every step
    step: float
    unit: str  # the y axis's unit, "" for none
    scale: float  # a value divided by scale is what the axis and the tooltips say
    percent: bool = False  # values are rates, said as percentages (health/percentages.py; scale unused)

    def text(self, value: float) -> str:
        if self.percent:
            return percent(value)  # the rate as every view shows it
        shown = round(value / self.scale, 1)
        return f"{shown:.0f}" if shown == int(shown) else f"{shown:.1f}"

    def ticks(self) -> list[float]:
        return [self.step * i for i in range(round(self.top / self.step) + 1)]


def latency_chart(series: dict) -> str:
    """The commit-to-verdict latency's p50 and p95 of the commits decided in each bucket."""
    buckets = series["buckets"]
    lines = [Series(p, [b[p] for b in buckets], COLOURS[p]) for p in ("p50", "p95")]
    axis = duration_axis(max((v for s in lines for v in s.values if v is not None), default=0))
    return line_chart("Time to verdict (commit seen → decided)", series["bucket_seconds"],
                      [b["start"] for b in buckets], lines, axis, f"latency ({axis.unit})")


def pass_rate_chart(series: dict) -> str:
    """The share of the commits decided in each bucket that passed."""
    buckets = series["buckets"]
    rates = Series("pass rate", [b["pass_rate"] for b in buckets], COLOURS["pass rate"])
    return bar_chart("Pass rate of the commits decided", series["bucket_seconds"], [b["start"] for b in buckets],
                     rates, Axis(top=1, step=0.2, unit="%", scale=1, percent=True), "pass rate")


def queue_chart(series: dict) -> str:
    """The commits waiting for a unit at the end of each bucket."""
    buckets = series["buckets"]
    queue = Series("queue", [b["queue"] for b in buckets], COLOURS["queue"])
    top = max((v for v in queue.values if v is not None), default=0)
    return line_chart("Queue: commits waiting for a unit", series["bucket_seconds"], [b["start"] for b in buckets],
                      [queue], count_axis(top), "commits")


def duration_axis(highest: float) -> Axis:
    """An axis in seconds, minutes, hours or days: the largest unit the highest value holds at least twice."""
    unit, size = next(((u, s) for u, s in DURATION_UNITS if highest >= 2 * s), DURATION_UNITS[-1])
    step, top = nice_scale(highest / size)
    return Axis(top=top * size, step=step * size, unit=unit, scale=size)


def count_axis(highest: float) -> Axis:
    step, top = nice_scale(highest, smallest_step=1)  # no tick between two whole commits
    return Axis(top=top, step=step, unit="", scale=1)


def nice_scale(highest: float, smallest_step: float = 0) -> tuple[float, float]:
    """(step, top): a round step (1, 2 or 5 times a power of ten) giving about Y_TICKS ticks, and the first
    multiple of it at or above `highest` (at least one step)."""
    raw_step = max(highest / Y_TICKS, smallest_step)
    if raw_step <= 0:  # nothing but zeros: an axis up to 1
        return 1, 1
    power = 10 ** math.floor(math.log10(raw_step))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw_step * (1 - 1e-9))
    return step, step * max(math.ceil(highest / step - 1e-9), 1)


def line_chart(title: str, bucket_seconds: int, starts: list[int], lines: list[Series], axis: Axis,
               y_title: str) -> str:
    """Each series as a line through its values (broken where a bucket has none), a dot on each value."""
    return _chart(title, bucket_seconds, starts, lines, axis, y_title, _draw_line)


def bar_chart(title: str, bucket_seconds: int, starts: list[int], bars: Series, axis: Axis, y_title: str) -> str:
    """A bar per bucket with a value."""
    return _chart(title, bucket_seconds, starts, [bars], axis, y_title, _draw_bars)


class _Plot:
    """Where buckets and values go in the plot area."""

    def __init__(self, count: int, axis: Axis):
        self.count, self.axis = count, axis
        self.width, self.height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(self, index: int) -> float:
        return LEFT + (index + 0.5) * self.width / self.count

    def y(self, value: float) -> float:
        return TOP + self.height * (1 - value / self.axis.top)

    @property
    def slot(self) -> float:
        return self.width / self.count


def _chart(title, bucket_seconds, starts, series, axis, y_title, draw) -> str:
    has_data = starts and any(v is not None for s in series for v in s.values)
    parts = [_text(WIDTH / 2, 20, title, "chart-title", anchor="middle", size=15, weight="bold")]
    if not has_data:
        parts.append(_rect(LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM, "plot-area", "#f8f9fa"))
        parts.append(_text(WIDTH / 2, TOP + (HEIGHT - TOP - BOTTOM) / 2, NO_DATA, "no-data", anchor="middle", size=14,
                           fill="#6c757d"))
        return _svg(title, parts)
    plot = _Plot(len(starts), axis)
    parts += _y_axis(plot, y_title)
    parts += _x_axis(plot, bucket_seconds, starts)
    for s in series:
        parts.append(f'<g class="series" data-series={quoteattr(s.name)}>')
        parts += draw(plot, s, [_bucket_text(bucket_seconds, start) for start in starts])
        parts.append("</g>")
    if len(series) > 1:
        parts += _legend(series)
    return _svg(title, parts)


def _y_axis(plot: _Plot, y_title: str) -> list[str]:
    parts = []
    for value in plot.axis.ticks():
        y = plot.y(value)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                     f'stroke="#dee2e6" stroke-width="1"/>')
        parts.append(_text(LEFT - 6, y + 4, plot.axis.text(value), "y-label", anchor="end"))
    middle = TOP + plot.height / 2
    parts.append(_text(14, middle, y_title, "y-title", anchor="middle", rotate=(-90, 14, middle)))
    return parts


def _x_axis(plot: _Plot, bucket_seconds: int, starts: list[int]) -> list[str]:
    every = math.ceil(len(starts) / MAX_X_LABELS)
    base = TOP + plot.height
    parts = [f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#495057"/>']
    for index in range(0, len(starts), every):
        parts.append(_text(plot.x(index), base + 16, _tick_text(bucket_seconds, starts[index]), "x-label",
                           anchor="middle"))
    zone = "UTC hour" if bucket_seconds < 86400 else "UTC day"
    parts.append(_text(LEFT + plot.width / 2, HEIGHT - 6, zone, "x-title", anchor="middle", fill="#6c757d"))
    return parts


def _draw_line(plot: _Plot, series: Series, bucket_texts: list[str]) -> list[str]:
    parts, run = [], []
    for index, value in enumerate(series.values + [None]):  # the final None ends the last run
        if value is None:
            if len(run) > 1:
                points = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
                parts.append(f'<polyline class="line" points="{points}" fill="none" stroke="{series.colour}" '
                             f'stroke-width="2"/>')
            run = []
            continue
        x, y = plot.x(index), plot.y(value)
        run.append((x, y))
        tip = f"{bucket_texts[index]}: {series.name} {plot.axis.text(value)} {_unit_word(plot.axis)}".rstrip()
        parts.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{series.colour}" '
                     f'data-value="{value}"><title>{escape(tip)}</title></circle>')
    return parts


def _draw_bars(plot: _Plot, series: Series, bucket_texts: list[str]) -> list[str]:
    parts = []
    width = max(plot.slot * 0.7, 1)
    for index, value in enumerate(series.values):
        if value is None:
            continue
        top = min(plot.y(value), TOP + plot.height - ZERO_BAR)
        tip = f"{bucket_texts[index]}: {series.name} {plot.axis.text(value)}"
        parts.append(f'<rect class="bar" x="{plot.x(index) - width / 2:.1f}" y="{top:.1f}" width="{width:.1f}" '
                     f'height="{TOP + plot.height - top:.1f}" fill="{series.colour}" data-value="{value}">'
                     f'<title>{escape(tip)}</title></rect>')
    return parts


def _legend(series: list[Series]) -> list[str]:
    parts = []
    x = WIDTH - RIGHT - 60 * len(series)  # on the title's line, right of it: clear of the plotted points
    for s in series:
        parts.append(f'<g class="legend-item"><rect x="{x}" y="10" width="12" height="12" fill="{s.colour}"/>')
        parts.append(_text(x + 16, 20, s.name, "legend") + "</g>")
        x += 60
    return parts


def _unit_word(axis: Axis) -> str:
    return "" if axis.percent else axis.unit


def _tick_text(bucket_seconds: int, start: int) -> str:
    return time.strftime("%H:%M" if bucket_seconds < 86400 else "%m-%d", time.gmtime(start))


def _bucket_text(bucket_seconds: int, start: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC" if bucket_seconds < 86400 else "%Y-%m-%d", time.gmtime(start))


def _text(x: float, y: float, content: str, role: str, anchor: str = "start", size: int = 11, weight: str = "normal",
          fill: str = "#212529", rotate: tuple[float, float, float] | None = None) -> str:
    turn = f' transform="rotate({rotate[0]} {rotate[1]:.1f} {rotate[2]:.1f})"' if rotate else ""
    return (f'<text class="{role}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'font-weight="{weight}" fill="{fill}"{turn}>{escape(content)}</text>')


def _rect(x: float, y: float, width: float, height: float, role: str, fill: str) -> str:
    return f'<rect class="{role}" x="{x}" y="{y}" width="{width}" height="{height}" fill="{fill}"/>'


def _svg(title: str, parts: list[str]) -> str:
    body = "\n".join(parts)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" role="img" aria-label={quoteattr(title)}>\n'
            f"<title>{escape(title)}</title>\n{body}\n</svg>\n")
