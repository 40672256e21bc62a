"""The issue per break's rows (store/culprit_issues.py) on a SQLite file with the relay's tables: each break told
once, whichever master writes it, and each issue closed once."""

from __future__ import annotations

from crcr.store.culprit_issues import close, find, open_issues, record_break, remember_number
from test_store import db, open_database  # noqa: F401  (the fixture: a SQLite database with the relay's tables)

REPO = "acme/npu"
A, B = "a" * 40, "b" * 40
T1, T2, T3 = "ops::test_a", "ops::test_b", "nn::test_c"


def test_the_first_break_opens_a_later_one_adds_only_its_new_tests_and_the_same_tests_add_nothing(db):
    opened = record_break(db, "npu", A, REPO, [T1, T2], 4, now=100)
    assert (opened.opened, opened.tests, opened.issue.state, opened.issue.bisections) == (True, [T1, T2], "open", [4])

    added = record_break(db, "npu", A, REPO, [T2, T3], 5, now=200)
    assert (added.opened, added.reopened, added.tests) == (False, False, [T3])
    assert (added.issue.tests, added.issue.bisections, added.issue.updated_at) == ([T1, T2, T3], [4, 5], 200)

    assert record_break(db, "npu", A, REPO, [T1, T3], 6, now=300) is None
    assert record_break(db, "cuda", A, "acme/cuda", [T1], None, now=300).opened, "another backend: its own issue"


def test_a_second_master_writing_the_same_break_writes_nothing(db, tmp_path):
    other = open_database(f"sqlite:///{tmp_path / 'state.sqlite'}", tmp_path)
    try:
        assert record_break(db, "npu", A, REPO, [T1], 4, now=100).opened
        assert record_break(other, "npu", A, REPO, [T1], 4, now=101) is None
    finally:
        other.close()


def test_the_number_is_remembered_and_an_issue_closes_once_and_opens_again_at_a_new_break(db):
    issue = record_break(db, "npu", A, REPO, [T1], 4, now=100).issue
    record_break(db, "npu", B, REPO, [T2], 4, now=100)
    remember_number(db, "npu", A, 17)

    assert find(db, "npu", A).number == 17
    assert close(db, issue.id, now=500) and not close(db, issue.id, now=501)
    assert [i.sha for i in open_issues(db, "npu")] == [B]
    assert (find(db, "npu", A).state, find(db, "npu", A).closed_at) == ("closed", 500)

    again = record_break(db, "npu", A, REPO, [T3], 7, now=600)
    assert (again.reopened, again.tests, again.issue.state, again.issue.number) == (True, [T3], "open", 17)
