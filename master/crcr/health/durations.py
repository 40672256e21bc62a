"""A span of time as the pages, statuses and mails say it."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """'45 s', '10 min', '6 h', '6 h 5 min', '2 d 3 h': the two largest units, rounded down."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    days, hours = divmod(hours, 24)
    return f"{days} d" + (f" {hours} h" if hours else "")
