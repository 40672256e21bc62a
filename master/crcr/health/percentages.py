"""How every view shows a rate: the answers carry a number from 0 to 1, the pages, the charts and `crcr status`
show it with this one rule (docs/health.md), so that they read alike."""

from __future__ import annotations

import math


def percent(rate: float) -> str:
    """The rate as a percentage rounded half up to one decimal, the decimal left out when it is 0 ('66.7%', '50%',
    '0.5%'): the rule of the web UI's percent() too (static/scripts.js)."""
    tenths = math.floor(rate * 1000 + 0.5)  # as JavaScript's Math.round: half up
    whole, tenth = divmod(tenths, 10)
    return f"{whole}.{tenth}%" if tenth else f"{whole}%"
