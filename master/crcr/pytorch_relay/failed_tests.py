"""A job's failed tests as PyTorch's HUD takes them (`workflow.failed_tests`): RFC-0054's caps (1000 entries, a
message of 1 KB, a stack trace of 4 KB), and the whole callback under the 2 MB body HUD refuses with a 413 after
PyTorch's relay has moved the job's state (the job's row would be lost; the caps alone allow about 5 MB). What
does not fit is trimmed longest fields first: the stack traces to a common length, then the messages, and only
then entries dropped; the caller says how many were left out."""

from __future__ import annotations

import json

from crcr.github.limits import cut

MAX_ENTRIES = 1000
MAX_MESSAGE = 1024
MAX_STACKTRACE = 4096
MAX_BODY = 2 * 1024 * 1024  # bytes: HUD's bodyParser sizeLimit
# Bytes kept free for what each dispatch's body adds (the upstream event echoed: a few KB) and the triage verdict
# (16 KB at most).
BODY_MARGIN = 64 * 1024


def within_caps(details: list[dict]) -> list[dict]:
    return [{**d, "message": cut(d["message"], MAX_MESSAGE), "stacktrace": cut(d["stacktrace"], MAX_STACKTRACE)}
            for d in details[:MAX_ENTRIES]]


def fitted(details: list[dict], room: int) -> list[dict]:
    """`details` within the caps, and within `room` bytes of JSON."""
    entries = within_caps(details)
    for field in ("stacktrace", "message"):
        if _size(entries) <= room:
            return entries
        entries = _longest_cut(entries, field, room)
    while entries and _size(entries) > room:
        entries = entries[: len(entries) * 9 // 10]
    return entries


def with_failed_tests(body: dict, details: list[dict]) -> tuple[dict, int]:
    """The callback `body` with its workflow's failed tests, the whole under MAX_BODY; and how many failing tests
    its entries leave out."""
    room = MAX_BODY - BODY_MARGIN - len(_encoded(body)) - len(_encoded({"failed_tests": []}))
    entries = fitted(details, room)
    return {**body, "workflow": {**body["workflow"], "failed_tests": entries}}, len(details) - len(entries)


def _longest_cut(entries: list[dict], field: str, room: int) -> list[dict]:
    """The entries with `field` cut to the longest common length that fits them in `room` (0 if none does)."""
    low, high = 0, max((len(e[field]) for e in entries), default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if _size(_cut_all(entries, field, middle)) <= room:
            low = middle
        else:
            high = middle - 1
    return _cut_all(entries, field, low)


def _cut_all(entries: list[dict], field: str, limit: int) -> list[dict]:
    return [{**e, field: cut(e[field], limit) if limit else ""} for e in entries]


def _size(entries: list[dict]) -> int:
    return len(_encoded(entries))


def _encoded(value) -> bytes:
    return json.dumps(value).encode()
