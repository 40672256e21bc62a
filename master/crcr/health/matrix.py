"""The matrix of a backend's newest upstream commits by suites: verdicts, counts, covered and bisected markers."""

from __future__ import annotations

from crcr.config.upstream_web import commit_link
from crcr.health.links import build_url
from crcr.health.plans import ReadPlan
from crcr.health.results import results_text
from crcr.store.commits import CommitRow
from crcr.store.history import BuildRow, SuiteRunRow


def cell(run: SuiteRunRow) -> dict:
    return {"results": results_text(run.results), "passed": run.passed, "failed": run.failed + run.errored,
            "flaky": run.flaky, "skipped": run.skipped, "new": run.new, "timed_out": run.timed_out}


def cells(runs: list[SuiteRunRow]) -> dict:
    return {run.suite: cell(run) for run in runs}


def covered_by(commit: CommitRow, build: BuildRow | None) -> str | None:
    """The commit whose build decided this one, when it was covered."""
    return build.sha if commit.how == "covered" and build is not None else None


def shown_build(commit: CommitRow, builds: dict[int, BuildRow],
                bisection_builds: dict[str, BuildRow]) -> BuildRow | None:
    """The commit's deciding build; for a commit a bisection decided (it has none), the bisection's newest build of
    it, when the bisection built it."""
    if commit.buildid is not None:
        return builds.get(commit.buildid)
    return bisection_builds.get(commit.sha) if commit.how == "bisected" else None


def matrix(commits: list[CommitRow], builds: dict[int, BuildRow], runs: list[SuiteRunRow],
           plans: list[ReadPlan], commit_url: str | None, *,
           bisection_builds: dict[str, BuildRow]) -> dict:
    """`commits` newest upstream first; `builds` their deciding builds by id; `bisection_builds` the newest bisection build
    by sha of those decided "bisected"; `runs` both's suite runs in the order they were recorded (their suites are
    listed in that order)."""
    suites = list(dict.fromkeys(run.suite for run in runs))
    runs_of: dict[int, list[SuiteRunRow]] = {}
    for run in runs:
        runs_of.setdefault(run.buildid, []).append(run)
    bisected = {sha for plan in plans for sha in plan.commits}
    rows = []
    for commit in commits:
        build = shown_build(commit, builds, bisection_builds)
        rows.append({
            "sha": commit.sha,
            "title": commit.title,
            "author": commit.author,
            "commit_url": commit_link(commit_url, commit.sha),
            "seen_at": commit.seen_at,
            "started_at": commit.started_at,
            "state": commit.state,
            "how": commit.how,
            "description": commit.description,
            "covered_by": covered_by(commit, build),
            "bisected": commit.how == "bisected" or commit.sha in bisected,
            "build_url": None if build is None else build_url(build.builderid, build.number),
            "build_number": None if build is None else build.number,
            "build_kind": None if build is None else build.kind,  # a bisection's ran only the tests it asked
            "cells": {} if build is None else cells(runs_of.get(build.buildid, [])),
        })
    return {"suites": suites, "commits": rows}
