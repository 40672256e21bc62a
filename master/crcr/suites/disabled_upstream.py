"""PyTorch's disabled tests (docs/backends.md, "Tests upstream disabled"): the condensed list test-infra publishes
read and checked, the entries that apply to a backend's platforms, the file its suites get, and the issue a skip
message names. Pure: the leader fetches the list (services/leader/disabled_tests.py), the suite's step ships it.

The condensed list: {"test_x (__main__.TestY)": ["<issue number>", "<issue url>", [platforms]]}, [] meaning every
platform. What a run gets is PyTorch's .pytorch-disabled-tests.json: {"test_x (__main__.TestY)": ["<url>", []]}."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from crcr.shipped.crcr_selection import DISABLED_REASON

ISSUE_URL = "https://github.com/pytorch/pytorch/issues/{issue}"
BAD_ENTRIES_SHOWN = 5  # of the entries a list has that are not as the format says, how many its problem names
# The skip messages of a disabled test: the selection plugin's, and PyTorch's own harness's (check_if_enable).
_OURS = re.compile(re.escape(DISABLED_REASON).replace(re.escape("{issue}"), r"([0-9]+)"))
_PYTORCHS = re.compile(r"Test is disabled because an issue exists disabling it: \S*/issues/([0-9]+)")


@dataclass(frozen=True)
class DisabledTest:
    key: str  # "test_x (__main__.TestY)", as PyTorch names it
    issue: str  # the issue's number
    url: str
    platforms: tuple[str, ...]  # () for every platform


class UnreadableList(ValueError):
    """A condensed list that is not one at all (not JSON, not an object): the last good list stays."""


def parse_condensed(text: str | bytes) -> tuple[list[DisabledTest], list[str]]:
    """The list's entries, and what is wrong with those it skips (each named by its key). UnreadableList when the
    text is no list at all."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise UnreadableList(f"not JSON: {e}") from None
    if not isinstance(data, dict):
        raise UnreadableList(f"expected a JSON object of tests, got {type(data).__name__}")
    entries, bad = [], []
    for key, value in data.items():
        entry = _entry(key, value)
        if entry is None:
            bad.append(key)
        else:
            entries.append(entry)
    return entries, [_bad_entries(bad)] if bad else []


def _entry(key: str, value) -> DisabledTest | None:
    if len(key.split()) < 2 or not (isinstance(value, list) and len(value) == 3):
        return None
    issue, url, platforms = value
    if not (isinstance(issue, str) and issue.isdigit() and isinstance(url, str) and isinstance(platforms, list)
            and all(isinstance(p, str) for p in platforms)):
        return None
    return DisabledTest(key, issue, url, tuple(platforms))


def _bad_entries(keys: list[str]) -> str:
    shown = ", ".join(repr(key) for key in keys[:BAD_ENTRIES_SHOWN])
    more = f" and {len(keys) - BAD_ENTRIES_SHOWN} more" if len(keys) > BAD_ENTRIES_SHOWN else ""
    return (f"{len(keys)} entries are not [\"<issue number>\", \"<issue url>\", [platforms]] and are left out: "
            f"{shown}{more}")


def applying(entries: list[DisabledTest], platforms: list[str]) -> list[DisabledTest]:
    """The entries that apply to a backend counting `platforms` as its own: those for every platform, and those
    sharing one with it."""
    own = set(platforms)
    return [entry for entry in entries if not entry.platforms or own & set(entry.platforms)]


def harness_file(entries: list[DisabledTest]) -> dict:
    """PyTorch's .pytorch-disabled-tests.json of `entries`, each for every platform: the relay decided they apply."""
    return {entry.key: [entry.url, []] for entry in entries}


def as_rows(entries: list[DisabledTest]) -> str:
    """The entries as the relay's table keeps them (JSON text), read back by from_rows."""
    return json.dumps([[e.key, e.issue, e.url, list(e.platforms)] for e in entries])


def from_rows(text: str | None) -> list[DisabledTest]:
    return [DisabledTest(key, issue, url, tuple(platforms)) for key, issue, url, platforms in json.loads(text or "[]")]


def disabling_issue(message: str | None) -> str | None:
    """The issue number a skip message says disabled its test (the plugin's, or PyTorch's harness's); None for any
    other skip."""
    found = _OURS.fullmatch(message or "") or _PYTORCHS.search(message or "")
    return found[1] if found else None


def issue_url(issue: str) -> str:
    return ISSUE_URL.format(issue=issue)
