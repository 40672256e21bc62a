"""GitHub's limits on the texts the relay posts. A text over one makes GitHub refuse the whole post (422), which the
outbox gives up for good: a status or a check run lost because a test's id, a suite's error or a host's words were
long. So every commit status and check run is cut to them on its way into the outbox (OutboxSender.enqueue),
whatever made its text.

PyTorch's relay's callbacks (kind `callback`) go as they are: their long parts, a job's failed tests and triage
verdict, are fitted to that relay's and HUD's own limits when they are made (pytorch_relay/failed_tests.py,
triage.py)."""

from __future__ import annotations

from crcr.names import GITHUB_DESCRIPTION_LIMIT

ELLIPSIS = "…"
# A check run's output.title: GitHub documents no limit; other clients keep to 255 characters, and so does the relay.
CHECK_RUN_TITLE_LIMIT = 255
# A check run's output.summary and output.text: 65535 characters in GitHub's docs, counted in UTF-8 bytes in practice.
CHECK_RUN_TEXT_LIMIT = 65535


def cut(text: str, limit: int) -> str:
    """`text`, or as much of its start as fits in `limit` characters with '…'."""
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS


def cut_to_bytes(text: str, limit: int) -> str:
    """`text`, or as much of its start as fits in `limit` bytes of UTF-8 with '…' (never half a character)."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    return encoded[: limit - len(ELLIPSIS.encode())].decode(errors="ignore") + ELLIPSIS


def status_within_limits(fields: dict) -> dict:
    """A commit status's fields, its description cut to GitHub's 140 characters."""
    if fields.get("description") is None:
        return fields
    return {**fields, "description": cut(fields["description"], GITHUB_DESCRIPTION_LIMIT)}


def check_run_within_limits(fields: dict) -> dict:
    """A check run's fields, its output's title, summary and text cut to GitHub's limits."""
    output = fields.get("output")
    if not output:
        return fields
    cut_output = {**output}
    if output.get("title") is not None:
        cut_output["title"] = cut(output["title"], CHECK_RUN_TITLE_LIMIT)
    for name in ("summary", "text"):
        if output.get(name) is not None:
            cut_output[name] = cut_to_bytes(output[name], CHECK_RUN_TEXT_LIMIT)
    return {**fields, "output": cut_output}
