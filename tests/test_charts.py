"""The backend page's charts (crcr.health.charts): SVG a browser reads, showing the points and labels the series
implies, and saying so when the range has no data."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import pytest

from crcr.health.charts import NO_DATA, count_axis, duration_axis, latency_chart, pass_rate_chart, queue_chart

SVG = "{http://www.w3.org/2000/svg}"
DAY, HOUR = 86400, 3600
DEC_1 = 1764547200  # 2025-12-01 00:00 UTC


def bucket(start: int, decided=0, p50=None, p95=None, pass_rate=None, queue=0) -> dict:
    return {"start": start, "decided": decided, "p50": p50, "p95": p95, "pass_rate": pass_rate, "builds": decided,
            "queue": queue}


def days(*buckets: dict) -> dict:
    return {"bucket_seconds": DAY, "buckets": list(buckets)}


def parse(svg: str) -> ElementTree.Element:
    root = ElementTree.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    return root


def texts(root, role: str) -> list[str]:
    return [e.text for e in root.iter(f"{SVG}text") if e.get("class") == role]


def points(root, series: str, shape: str = "circle") -> list[tuple[float, str]]:
    """(value, tooltip) of each point (or bar) of `series`."""
    group = next(g for g in root.iter(f"{SVG}g") if g.get("data-series") == series)
    return [(float(p.get("data-value")), p.find(f"{SVG}title").text) for p in group.iter(f"{SVG}{shape}")]


WEEK = days(
    bucket(DEC_1, decided=2, p50=600, p95=5400, pass_rate=0.5, queue=3),
    bucket(DEC_1 + DAY),  # nothing decided that day: no point, a gap in the lines
    bucket(DEC_1 + 2 * DAY, decided=4, p50=1200, p95=7200, pass_rate=0.0, queue=0),
    bucket(DEC_1 + 3 * DAY, decided=1, p50=3000, p95=3000, pass_rate=1.0, queue=1),
)


def test_the_latency_chart_has_a_point_per_decided_bucket_for_p50_and_p95_in_a_readable_unit():
    root = parse(latency_chart(WEEK))

    assert texts(root, "chart-title") == ["Time to verdict (commit seen → decided)"]
    assert texts(root, "y-title") == ["latency (h)"]  # 7200 s at most: an axis in hours
    assert texts(root, "y-label") == ["0", "0.5", "1", "1.5", "2"]
    assert texts(root, "x-label") == ["12-01", "12-02", "12-03", "12-04"]
    assert texts(root, "legend") == ["p50", "p95"]
    assert points(root, "p50") == [(600, "2025-12-01: p50 0.2 h"), (1200, "2025-12-03: p50 0.3 h"),
                                   (3000, "2025-12-04: p50 0.8 h")]
    assert [value for value, _ in points(root, "p95")] == [5400, 7200, 3000]
    # The day with no verdict breaks each line: one polyline before it, one after.
    assert len([line for line in root.iter(f"{SVG}polyline")]) == 2 * 1


def test_a_point_sits_at_its_value_on_the_axis():
    root = parse(queue_chart(WEEK))
    grid = {e.text: float(e.get("y")) - 4 for e in root.iter(f"{SVG}text") if e.get("class") == "y-label"}
    circles = next(g for g in root.iter(f"{SVG}g") if g.get("data-series") == "queue").iter(f"{SVG}circle")
    assert [(float(c.get("data-value")), float(c.get("cy"))) for c in circles] == [
        (3, pytest.approx(grid["3"], abs=0.1)), (0, pytest.approx(grid["0"], abs=0.1)),
        (0, pytest.approx(grid["0"], abs=0.1)), (1, pytest.approx(grid["1"], abs=0.1)),
    ]


def test_the_pass_rate_chart_has_a_bar_per_decided_bucket_in_percent_a_zero_one_visible():
    root = parse(pass_rate_chart(WEEK))

    assert texts(root, "y-label") == ["0%", "20%", "40%", "60%", "80%", "100%"]
    assert points(root, "pass rate", "rect") == [(0.5, "2025-12-01: pass rate 50%"), (0.0, "2025-12-03: pass rate 0%"),
                                                 (1.0, "2025-12-04: pass rate 100%")]
    bars = [float(r.get("height")) for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]
    assert bars[1] > 0 and bars[0] < bars[2]


def test_a_bar_says_its_rate_as_the_pages_and_crcr_status_do():
    # 1 of 16 is 6.25%: rounded half up to one decimal, as every view (health/percentages.py), not half to even.
    root = parse(pass_rate_chart(days(bucket(DEC_1, decided=16, pass_rate=1 / 16), bucket(DEC_1 + DAY, decided=3,
                                                                                          pass_rate=2 / 3))))
    assert [tip for _, tip in points(root, "pass rate", "rect")] == ["2025-12-01: pass rate 6.3%",
                                                                     "2025-12-02: pass rate 66.7%"]


def test_the_queue_chart_counts_whole_commits_and_shows_an_always_empty_queue():
    root = parse(queue_chart(WEEK))
    assert texts(root, "y-label") == ["0", "1", "2", "3"]
    assert [value for value, _ in points(root, "queue")] == [3, 0, 0, 1]

    empty_queue = parse(queue_chart(days(bucket(DEC_1), bucket(DEC_1 + DAY))))
    assert [value for value, _ in points(empty_queue, "queue")] == [0, 0]  # an empty queue is data, not its absence
    assert NO_DATA not in texts(empty_queue, "no-data")


def test_hourly_buckets_are_labelled_by_utc_hour_at_most_eight_labels():
    series = {"bucket_seconds": HOUR,
              "buckets": [bucket(DEC_1 + n * HOUR, decided=1, p50=30, p95=90, pass_rate=1, queue=n % 3)
                          for n in range(24)]}
    root = parse(latency_chart(series))
    assert texts(root, "x-label") == ["00:00", "03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00"]
    assert texts(root, "x-title") == ["UTC hour"]
    assert texts(root, "y-title") == ["latency (s)"]
    assert len(points(root, "p50")) == 24


@pytest.mark.parametrize("draw", [latency_chart, pass_rate_chart, queue_chart])
def test_a_range_without_data_says_so(draw):
    for series in (days(), {"bucket_seconds": HOUR, "buckets": []}):
        root = parse(draw(series))
        assert texts(root, "no-data") == [NO_DATA]
        assert not list(root.iter(f"{SVG}circle")) and not list(root.iter(f"{SVG}polyline"))
    if draw is not queue_chart:  # buckets with nothing decided: nothing to draw either
        assert texts(parse(draw(days(bucket(DEC_1), bucket(DEC_1 + DAY)))), "no-data") == [NO_DATA]


@pytest.mark.parametrize("highest, ticks, unit", [
    (0, [0, 1], "s"), (100, [0, 20, 40, 60, 80, 100], "s"), (5000, [0, 20, 40, 60, 80, 100], "min"),
    (3 * DAY, [0, 1, 2, 3], "d"), (11 * HOUR, [0, 5, 10, 15], "h"),
])
def test_a_duration_axis_has_round_ticks_in_one_unit(highest, ticks, unit):
    axis = duration_axis(highest)
    assert axis.unit == unit
    assert [value / axis.scale for value in axis.ticks()] == pytest.approx(ticks)
    assert axis.top >= highest


@pytest.mark.parametrize("highest, ticks", [(0, [0, 1]), (3, [0, 1, 2, 3]), (7, [0, 2, 4, 6, 8]),
                                            (12, [0, 5, 10, 15])])
def test_a_count_axis_ticks_whole_numbers(highest, ticks):
    assert count_axis(highest).ticks() == ticks
