"""The README badges' SVG (crcr.health.badges): well-formed, saying the verdict or the 7-day p95 in the right colour,
and escaping whatever a backend's name holds."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from crcr.health.badges import (
    COLOURS,
    duration_text,
    no_backend_badge,
    text_width,
    validated_badge,
    verdict_badge,
)

SVG = "{http://www.w3.org/2000/svg}"


def parsed(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def texts(svg: str) -> list[str]:
    """The badge's visible texts, left then right (each is drawn twice: a shadow, then the text)."""
    drawn = [t.text for t in parsed(svg).iter(f"{SVG}text")]
    assert drawn[0::2] == drawn[1::2], "each text has its shadow"
    return drawn[1::2]


def halves(svg: str) -> list[ET.Element]:
    """The label's and the message's rectangles (then the gloss over both)."""
    return parsed(svg).find(f"{SVG}g").findall(f"{SVG}rect")[:2]


def right_colour(svg: str) -> str:
    return halves(svg)[1].get("fill")


def widths(svg: str) -> tuple[int, int, int]:
    left, right = halves(svg)
    return int(parsed(svg).get("width")), int(left.get("width")), int(right.get("width"))


@pytest.mark.parametrize(("state", "failing", "pending", "message", "colour"), [
    ("passing", 0, False, "passing", COLOURS["passing"]),
    ("failing", 2, False, "2 failing", COLOURS["failing"]),
    ("failing", 0, False, "failing", COLOURS["failing"]),  # a broken build: no test counted
    ("known_failures", 3, False, "3 failing", COLOURS["known_failures"]),  # its commits' statuses say "0 new"
    ("error", 0, False, "error", COLOURS["error"]),
    (None, 0, True, "pending", COLOURS["pending"]),
    (None, 0, False, "no verdict yet", COLOURS["none"]),
])
def test_the_verdict_badge_says_the_backends_state_in_its_colour(state, failing, pending, message, colour):
    svg = verdict_badge("ok-alpha", state, failing, pending=pending)
    assert texts(svg) == ["crcr ok-alpha", message]
    assert right_colour(svg) == colour
    assert parsed(svg).find(f"{SVG}title").text == f"crcr ok-alpha: {message}"


def test_a_verdict_shows_even_while_newer_commits_are_pending():
    assert texts(verdict_badge("ok-alpha", "failing", 1, pending=True)) == ["crcr ok-alpha", "1 failing"]


def test_the_colours_are_distinct_per_state_but_known_failures_and_error_both_orange():
    assert len({COLOURS[k] for k in ("passing", "failing", "error", "pending", "none")}) == 5
    assert COLOURS["known_failures"] == COLOURS["error"]


@pytest.mark.parametrize(("p95", "message"), [
    (7800, "2h 10m"),
    (7200, "2h 0m"),
    (59, "59s"),
    (600, "10m"),
    (3 * 86400 + 5 * 3600 + 59, "3d 5h"),
    (None, "no verdict in 7 days"),
])
def test_the_validated_badge_says_the_7_day_p95(p95, message):
    svg = validated_badge(p95)
    assert texts(svg) == ["validated within", message]
    assert right_colour(svg) == (COLOURS["validated"] if p95 is not None else COLOURS["none"])


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (60, "1m"), (3599, "59m"), (3600, "1h 0m"), (86400, "1d 0h")])
def test_durations_read_in_their_two_largest_units(seconds, text):
    assert duration_text(seconds) == text


def test_an_unknown_backend_gets_a_badge_saying_so():
    svg = no_backend_badge("nope")
    assert texts(svg) == ["crcr nope", "no such backend"]
    assert right_colour(svg) == COLOURS["none"]


def test_markup_in_a_name_is_escaped_not_interpreted():
    name = '<script>&"x\''
    for svg in (verdict_badge(name, "passing", 0, pending=False), no_backend_badge(name)):
        assert "<script>" not in svg
        assert texts(svg)[0] == f"crcr {name}"
        assert parsed(svg).get("aria-label") == f"crcr {name}: {texts(svg)[1]}"


def test_a_very_long_name_is_shortened():
    (label, _) = texts(no_backend_badge("x" * 500))
    assert len(label) <= 60 and label.endswith("…")


def test_the_halves_are_as_wide_as_their_texts():
    narrow, wide = verdict_badge("ii", "passing", 0, pending=False), verdict_badge("WWWWWWWW", "passing", 0,
                                                                              pending=False)
    total, left, right = widths(narrow)
    assert total == left + right
    assert widths(wide)[1] > left + 50
    assert widths(wide)[2] == right  # the same message, the same width


def test_text_widths_follow_the_letters():
    assert text_width("iiii") < text_width("aaaa") < text_width("WWWW")
    # shields.io's "build | passing": texts 27 and 41 px wide in Verdana 11 px
    assert (text_width("build"), text_width("passing")) == (pytest.approx(27, abs=2), pytest.approx(41, abs=2))
    assert text_width("漢字") > text_width("ab")
