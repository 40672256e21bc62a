"""One upstream commit of a backend: its verdict, how it was decided, its build's suites and failing tests."""

from __future__ import annotations

import re

from crcr.config.errors import shown
from crcr.config.upstream_web import commit_link
from crcr.health.errors import HealthQueryError
from crcr.health.links import build_url
from crcr.health.matrix import cells, covered_by
from crcr.health.plans import bisections_holding, read_plans
from crcr.store.commits import CommitRow
from crcr.store.health_page_queries import AMBIGUOUS_SHOWN
from crcr.store.health_rows import CommitRows

MIN_PREFIX = 7
SHA_PREFIX = re.compile(r"[0-9a-f]{%d,40}" % MIN_PREFIX)


def sha_prefix(text: str) -> str:
    """The lower-case prefix to look up; at least MIN_PREFIX hex digits."""
    prefix = text.strip().lower()
    if not SHA_PREFIX.fullmatch(prefix):
        raise HealthQueryError(400, f"a commit is named by at least {MIN_PREFIX} hex digits of its sha (got {shown(text)})")
    return prefix


def pick_commit(backend: str, asked: str, candidates: list[CommitRow]) -> CommitRow:
    """The one commit `asked` names among the commits its prefix matched."""
    if not candidates:
        raise HealthQueryError(404, f"no commit {asked} of {backend} in the relay's history")
    if len(candidates) > 1:
        listed = ", ".join(c.sha for c in candidates[:AMBIGUOUS_SHOWN])
        more = " and more" if len(candidates) > AMBIGUOUS_SHOWN else ""
        raise HealthQueryError(400, f"{asked} names several commits of {backend}: {listed}{more}; give more digits")
    return candidates[0]


def commit_page(rows: CommitRows, commit_url: str | None) -> dict:
    commit, build = rows.commit, rows.build
    return {
        "backend": commit.backend,
        "sha": commit.sha,
        "title": commit.title,
        "author": commit.author,
        "commit_url": commit_link(commit_url, commit.sha),
        "state": commit.state,
        "description": commit.description,
        "how": commit.how,
        "seen_at": commit.seen_at,
        "started_at": commit.started_at,
        "decided_at": commit.decided_at,
        # None too for a commit in no figure (a forced build of one no upstream change brought: commits.IN_FIGURES)
        # and for one first decided unbuilt, as not relevant (commits.HAS_LATENCY), whatever decided it since
        "latency": commit.latency,
        "decided_unbuilt": commit.decided_unbuilt,
        "covered_by": covered_by(commit, build),
        "build_url": None if build is None else build_url(build.builderid, build.number),
        "build_kind": None if build is None else build.kind,  # "bisection": its cells hold the asked tests only
        "bisections": bisections_holding(read_plans(rows.bisections), commit.sha),
        "failing": [{"test": o.test, "suite": o.suite, "outcome": o.outcome, "new": o.new}
                    for o in rows.outcomes if o.outcome in ("failed", "errored")],
        "flaky": [o.test for o in rows.outcomes if o.outcome == "flaky"],
        "cells": cells(rows.runs),
    }
