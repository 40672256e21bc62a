"""The texts of the issue per break (services/leader/culprit_issues.py): its title, its opening body, the comment
a later break by the same culprit adds and the one that closes it; all within GitHub's limits.

The upstream commit is named with its pull request, read from its message as PyTorch's merges write it: a subject
ending "(#12345)", or a "Pull Request resolved: https://github.com/pytorch/pytorch/pull/12345" line. In the body
the pull request is written "owner/repo#12345": the issue lives in the backend's repository, where "#12345" would
name one of its own. A hidden marker names the backend and the culprit, so that the sender finds an issue it
created even when GitHub's answer was lost (github/issue_sender.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crcr.github.limits import cut, cut_to_bytes

TITLE_LIMIT = 256  # characters of an issue's title
BODY_LIMIT = 65536  # characters of an issue's or a comment's body, counted in UTF-8 bytes to be safe
SHORT_SHA = 10
MARKER = "<!-- crcr-culprit backend={backend} sha={sha} -->"
_SUBJECT_NUMBER = re.compile(r"\s*\(#(?P<number>\d+)\)\s*$")
_RESOLVED = re.compile(r"^Pull Request resolved: \S*/pull/(?P<number>\d+)\s*$", re.MULTILINE)
SHOWN_TESTS = 200  # tests listed in one text; GitHub's body limit cuts what is left


@dataclass(frozen=True)
class Culprit:
    """An upstream commit that broke a backend, as its message names it."""
    sha: str
    subject: str  # its message's first line, without its "(#12345)"
    pull_request: int | None


def culprit_of(sha: str, message: str) -> Culprit:
    subject = message.strip().splitlines()[0] if message.strip() else ""
    found = _SUBJECT_NUMBER.search(subject)
    resolved = _RESOLVED.search(message)
    number = found["number"] if found else resolved["number"] if resolved else None
    subject = _SUBJECT_NUMBER.sub("", subject)
    return Culprit(sha=sha, subject=subject, pull_request=int(number) if number else None)


def marker(backend: str, sha: str) -> str:
    return MARKER.format(backend=backend, sha=sha)


def title(backend: str, culprit: Culprit) -> str:
    pull_request = f" (#{culprit.pull_request})" if culprit.pull_request else ""
    return cut(f"{backend}: broken by {culprit.sha[:SHORT_SHA]}{pull_request} {culprit.subject}".strip(), TITLE_LIMIT)


def code(text: str) -> str:
    """`text` as inline code: what upstream's commits and tests wrote (a subject, a test id) mentions no one,
    links no issue of the backend's repository ("#123" there is its own) and brings no markup; a backtick or a line
    break of its own cannot end the span."""
    return "`" + " ".join(text.replace("`", "'").split()) + "`"


def _tests(tests: list[str]) -> str:
    lines = [f"- {code(test)}" for test in tests[:SHOWN_TESTS]]
    if len(tests) > SHOWN_TESTS:
        lines.append(f"- … and {len(tests) - SHOWN_TESTS} more")
    return "\n".join(lines)


def _links(bisection_url: str | None, build_urls: list[str]) -> str:
    found = [f"the bisection: {bisection_url}"] if bisection_url else []
    found += [f"build: {url}" for url in build_urls]
    return "\n".join(f"- {line}" for line in found)


def opening_body(backend: str, culprit: Culprit, upstream: str, commit_url: str | None, tests: list[str],
                 bisection_url: str | None, build_urls: list[str], maintainers: list[str]) -> str:
    """`upstream`: owner/repo of upstream, which the pull request is named in; `commit_url`: the culprit's page."""
    commit = f"[{culprit.sha[:SHORT_SHA]}]({commit_url})" if commit_url else f"`{culprit.sha}`"
    pull_request = f" ({upstream}#{culprit.pull_request})" if culprit.pull_request else ""
    parts = [
        f"Upstream commit {commit}{pull_request} broke {backend}: {code(culprit.subject)}",
        f"Failing since this commit ({len(tests)}):\n{_tests(tests)}",
        _links(bisection_url, build_urls),
        "This issue is closed once these tests pass again on the backend's branch.",
        " ".join(f"@{login}" for login in maintainers),
        marker(backend, culprit.sha),
    ]
    return _within_limit("\n\n".join(part for part in parts if part), marker(backend, culprit.sha))


def added_body(tests: list[str], bisection_url: str | None, build_urls: list[str], reopened: bool) -> str:
    """A later break by the same culprit: its tests, which the issue did not list yet."""
    again = "Broken again" if reopened else "Also broken"
    parts = [f"{again} by this commit ({len(tests)}):\n{_tests(tests)}", _links(bisection_url, build_urls)]
    return _within_limit("\n\n".join(part for part in parts if part))


def closing_body(sha: str, build_url: str) -> str:
    """The tests pass again: at upstream commit `sha`, in the build at `build_url`."""
    return f"Passing again at {sha[:SHORT_SHA]} ({build_url})."


def _within_limit(text: str, keep_at_end: str = "") -> str:
    """`text` within GitHub's limit, `keep_at_end` (the marker) kept whole when the rest is cut."""
    if len(text.encode()) <= BODY_LIMIT:
        return text
    tail = f"\n\n{keep_at_end}" if keep_at_end else ""
    return cut_to_bytes(text.removesuffix(tail), BODY_LIMIT - len(tail.encode())) + tail
