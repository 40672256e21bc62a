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


def log_page(builderid: int, number: int, step_number: int, log_slug: str) -> str:
    return f"{build_url(builderid, number)}/steps/{step_number}/logs/{log_slug}"


def junit_file(buildid: int, suite: str) -> str:
    """The suite's JUnit XML as the worker wrote it (www/junit.py), relative to the UI as the routes are."""
    return f"{JUNIT_PATH}/{buildid}/{suite}.xml"


JUNIT_PATH = "plugins/crcr/junit"
