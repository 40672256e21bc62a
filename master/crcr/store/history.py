"""Test history: each finished build of a backend (crcr_builds), its suites' counts (crcr_suite_runs) and the tests
that did not simply pass in it (crcr_test_outcomes), written once per build as it finishes, pruned after the
`history_days` setting.

Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and commits what it writes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BuildRow:
    buildid: int  # Buildbot's
    backend: str
    builderid: int
    number: int
    sha: str
    branch: str
    kind: str  # tables.BUILD_KINDS: upstream | forced | pull_request | bisection
    results: int  # Buildbot's results code (SUCCESS 0, WARNINGS 1, FAILURE 2, ... CANCELLED 6)
    state_string: str | None
    started_at: int
    complete_at: int
    timed_out: bool  # a suite of it timed out
    pull_request: int | None = None  # a pull request build's number, URL and title
    pull_request_url: str | None = None
    pull_request_title: str | None = None
    bisectionid: int | None = None  # a bisection build's


@dataclass(frozen=True)
class SuiteRunRow:
    buildid: int
    backend: str
    suite: str
    results: int  # its step's Buildbot results code
    passed: int
    failed: int  # errored ones not counted
    errored: int
    flaky: int
    skipped: int
    xfailed: int
    new: int  # failing, and not in the baseline's
    timed_out: bool
    complete_at: int  # the build's


@dataclass(frozen=True)
class TestOutcomeRow:
    __test__ = False  # not a pytest test class, whatever its name

    buildid: int
    backend: str
    suite: str
    test: str  # pytest's node id
    outcome: str  # tables.TEST_OUTCOMES: failed | errored | flaky | passed (passed: a bisection's asked tests only)
    new: bool  # a new failure against the baseline
    complete_at: int  # the build's
