"""README badges as SVG, in shields.io's "flat" style: `crcr <backend> | passing` (the backend's state:
crcr.health.state) and
`validated within | 2h 10m` (the 7-day p95 from upstream commit to verdict).

Ours rather than Buildbot's `buildbot-badges` plugin: that one shows the last build of a builder (its results
code) under /plugins/badges/, measuring text with cairo (cairocffi, cairosvg, klein to install); a backend's verdict
is the relay's ledger's, which a covered, coalesced or bisected commit has without a build of its own, and the
latency is no build's at all. Pure: the text widths are estimated from Verdana's advance widths, no font engine.
"""

from __future__ import annotations

import math
import unicodedata
from xml.sax.saxutils import escape

LABEL_COLOUR = "#555"
COLOURS = {  # shields.io's named colours, by the backend's state
    "passing": "#4c1",  # brightgreen
    "failing": "#e05d44",  # red
    "known_failures": "#fe7d37",  # orange
    "error": "#fe7d37",  # orange
    "pending": "#dfb317",  # yellow
    "none": "#9f9f9f",  # lightgrey
    "validated": "#007ec6",  # blue
}
HEIGHT = 20
PADDING = 5  # each side of a text
FONT_SIZE = 11
MAX_NAME = 50

# Verdana's advance widths in font units (2048 per em); others are taken as wide as a digit, East Asian wide
# characters as a full em.
_UNITS_PER_EM = 2048
_DEFAULT_UNITS = 1302
_ADVANCE = {
    **dict(zip("abcdefghijklmnopqrstuvwxyz", [1229, 1276, 1067, 1276, 1220, 720, 1276, 1296, 562, 700, 1200, 562,
                                               1992, 1296, 1243, 1276, 1276, 874, 1067, 807, 1296, 1200, 1665, 1200,
                                               1200, 1051])),
    **dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", [1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 868, 925, 1413, 1141,
                                               1744, 1532, 1620, 1235, 1620, 1431, 1403, 1249, 1498, 1401, 2028, 1405,
                                               1249, 1405])),
    **dict.fromkeys("0123456789", 1302),
    " ": 720, ".": 745, ",": 745, ":": 868, ";": 868, "-": 880, "_": 1302, "/": 1044, "(": 1044, ")": 1044,
    "'": 550, '"': 940, "!": 818, "…": 2048,
}


def verdict_badge(backend: str, state: str | None, failing_tests: int, pending: bool) -> str:
    """`state`: the backend's (health.state.STATES) or None before its first verdict; `failing_tests`: at its
    tip; `pending`: commits wait for a verdict. Never "passing" while a test fails: "3 failing"."""
    if state is not None:
        message = f"{failing_tests} failing" if failing_tests else state
        colour = COLOURS[state]
    elif pending:
        message, colour = "pending", COLOURS["pending"]
    else:
        message, colour = "no verdict yet", COLOURS["none"]
    return badge(_label(backend), message, colour)


def validated_badge(p95: int | None) -> str:
    """`p95`: seconds from upstream commit to verdict over 7 days, None when nothing was decided in them."""
    if p95 is None:
        return badge("validated within", "no verdict in 7 days", COLOURS["none"])
    return badge("validated within", duration_text(p95), COLOURS["validated"])


def no_backend_badge(name: str) -> str:
    return badge(_label(name), "no such backend", COLOURS["none"])


def duration_text(seconds: int) -> str:
    """The two largest units: 59s, 10m, 2h 10m, 3d 5h (rounded down)."""
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if days:
        return f"{days}d {hours % 24}h"
    if hours:
        return f"{hours}h {minutes % 60}m"
    if minutes:
        return f"{minutes}m"
    return f"{seconds}s"


def text_width(text: str) -> float:
    """Pixels the text takes in Verdana at FONT_SIZE."""
    return sum(_advance(c) for c in text) * FONT_SIZE / _UNITS_PER_EM


def _advance(char: str) -> int:
    if char in _ADVANCE:
        return _ADVANCE[char]
    return _UNITS_PER_EM if unicodedata.east_asian_width(char) in "WF" else _DEFAULT_UNITS


def _label(backend: str) -> str:
    # A name from the URL may be anything: a long one must not make a huge image.
    return "crcr " + (backend if len(backend) <= MAX_NAME else backend[: MAX_NAME - 1] + "…")


def badge(label: str, message: str, colour: str) -> str:
    left = math.ceil(text_width(label)) + 2 * PADDING
    right = math.ceil(text_width(message)) + 2 * PADDING
    width = left + right
    title = escape(f"{label}: {message}", {'"': "&quot;"})
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        '<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{width}" height="{HEIGHT}" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{left}" height="{HEIGHT}" fill="{LABEL_COLOUR}"/>'
        f'<rect x="{left}" width="{right}" height="{HEIGHT}" fill="{colour}"/>'
        f'<rect width="{width}" height="{HEIGHT}" fill="url(#s)"/></g>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" '
        f'font-size="{FONT_SIZE}">{_text(left / 2, label)}{_text(left + right / 2, message)}</g></svg>'
    )


def _text(x: float, text: str) -> str:
    """The text over its shadow, centred on x."""
    body = escape(text)
    return (f'<text x="{x}" y="15" fill="#010101" fill-opacity=".3">{body}</text>'
            f'<text x="{x}" y="14">{body}</text>')
