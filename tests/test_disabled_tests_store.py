"""The disabled tests' row (store/disabled_tests.py) and the backend page's "Disabled upstream" section
(health/disabled.py): the list kept and replaced, and the tests the latest run of each suite skipped as disabled,
from the history, with the list's state beside them."""

from __future__ import annotations

import json
from dataclasses import replace

from crcr.cli.healthtext import disabled_upstream_lines
from crcr.health.disabled import disabled_upstream
from crcr.store.disabled_tests import KeptList, disabled_in_latest_runs, forget_list, keep_list, kept_list
from crcr.store.history import TestOutcomeRow, record_build
from crcr.suites.disabled_upstream import as_rows, parse_condensed
from disabled_tests_host import condensed_entry
from test_history_store import build, outcome, suite_run

# db: the fixture, a SQLite database with the relay's tables
from test_store import db, open_database, sqlite_database  # noqa: F401

ADD, MUL = "test/test_ops.py::TestOpsNPU::test_add_npu", "test/test_ops.py::TestOpsNPU::test_mul_npu"


def kept(problem: str | None = None) -> KeptList:
    entries, _ = parse_condensed(json.dumps({"test_add (__main__.TestOps)": condensed_entry(11),
                                             "test_mul (__main__.TestOps)": condensed_entry(12, ["linux"]),
                                             "test_div (__main__.TestOps)": condensed_entry(13, ["rocm"])}))
    return KeptList("http://host/list.json", '"v1"', None, 100, 200, as_rows(entries), problem)


def disabled(buildid: int, test: str, issue: str) -> TestOutcomeRow:
    return replace(outcome(buildid, 1000 + buildid, test, "disabled"), issue=issue)


def test_the_list_is_one_row_replaced_whole_and_forgotten(db):
    assert kept_list(db) is None
    keep_list(db, kept())
    keep_list(db, kept("HTTP 502: the last good list stays"))
    assert kept_list(db) == kept("HTTP 502: the last good list stays")
    forget_list(db)
    assert kept_list(db) is None


def test_the_page_lists_the_latest_runs_disabled_tests_and_the_lists_state(db):
    record_build(db, build(1, 1001), [suite_run(1, 1001)], [disabled(1, ADD, "11"), disabled(1, MUL, "12")])
    record_build(db, build(2, 1002), [suite_run(2, 1002)], [disabled(2, ADD, "11")])  # issue 12 closed since
    record_build(db, build(3, 1003, kind="bisection"), [suite_run(3, 1003)], [])  # asked tests only: not a run's
    keep_list(db, kept())

    page = disabled_upstream(disabled_in_latest_runs(db, "alpha"), kept_list(db), ("linux",))

    assert page == {
        "platforms": ["linux"],
        "tests": [{"suite": "ops", "test": ADD, "issue": "11",
                   "issue_url": "https://github.com/pytorch/pytorch/issues/11"}],
        "list": {"url": "http://host/list.json", "fetched_at": 100, "checked_at": 200, "entries": 3, "applying": 2,
                 "problem": None}}
    assert disabled_upstream([], None, ())["list"] is None


def test_crcr_status_says_it_in_one_line():
    page = disabled_upstream([("ops", ADD, "11", 2)], kept("HTTP 502: the last good list stays"), ("linux",))
    assert disabled_upstream_lines(page) == [
        "disabled upstream: 1 test skipped in its latest runs (2 of 3 listed apply; last problem: HTTP 502: the last "
        "good list stays)"]
    assert disabled_upstream_lines(disabled_upstream([], None, ())) == [
        "disabled upstream: 0 tests skipped in its latest runs (not followed)"]
    assert disabled_upstream_lines(None) == []  # a master older than this crcr
