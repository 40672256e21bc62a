"""The routes of the Buildbot UI (and of the relay's pages) the figures link to."""

from __future__ import annotations

from urllib.parse import quote


def build_url(builderid: int, number: int) -> str:
    return f"#/builders/{builderid}/builds/{number}"


def backend_page(backend: str) -> str:
    return f"#/health/{backend}"


def test_page(backend: str, test: str) -> str:
    return f"#/health/{backend}/test?id={quote(test, safe='')}"


def bisection_page(bisectionid: int) -> str:
    return f"#/bisections/{bisectionid}"
