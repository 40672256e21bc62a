"""The quarantine's counting on a real SQLite file with the relay's tables, builds recorded as the history recorder
records them, at times of the test's choosing: a test that flakes `flakes` times within `days` goes in, its suite's
`clean_runs` whole runs in a row without it failing take it out, each move once and recorded; by hand, either way."""

from __future__ import annotations

from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow, record_build
from crcr.store.quarantine import (
    DAY,
    Move,
    Policy,
    clean_runs,
    prune,
    put_in,
    quarantined_of,
    quarantined_tests,
    recent_moves,
    release,
    review_build,
)

# db: the fixture, a SQLite database with the relay's tables
from test_store import db  # noqa: F401

FLAKY = "test/test_ops.py::test_sometimes"
OTHER = "test/test_ops.py::test_other"
POLICY = Policy(flakes=3, days=14, clean_runs=5)


class History:
    """Builds of backend alpha's suite ops, one a day from day 1, each recorded then reviewed."""

    def __init__(self, db):
        self.db, self.buildid = db, 0

    def build(self, outcomes: dict[str, str] | None = None, kind: str = "upstream", broken: str | None = None,
              policy: Policy = POLICY) -> list[Move]:
        self.buildid += 1
        at = self.buildid * DAY
        row = BuildRow(buildid=self.buildid, backend="alpha", builderid=1, number=self.buildid, sha="a" * 40,
                       branch="main", kind=kind, results=0, state_string="", started_at=at - 60, complete_at=at,
                       timed_out=False)
        run = SuiteRunRow(buildid=self.buildid, backend="alpha", suite="ops", results=0, passed=10, failed=0,
                          errored=0, flaky=0, skipped=0, xfailed=0, new=0, timed_out=False, complete_at=at,
                          broken=broken)
        tests = [TestOutcomeRow(buildid=self.buildid, backend="alpha", suite="ops", test=test, outcome=outcome,
                                new=False, complete_at=at) for test, outcome in (outcomes or {}).items()]
        assert record_build(self.db, row, [run], tests)
        return review_build(self.db, self.buildid, policy)

    def flakes(self, count: int) -> list[Move]:
        return [move for _ in range(count) for move in self.build({FLAKY: "flaky"})]


def test_a_test_flaking_three_times_in_the_window_goes_in_once(db):
    history = History(db)
    assert history.flakes(2) == []

    (move,) = history.build({FLAKY: "flaky"})

    assert (move.test, move.move, move.who, move.why, move.automatic) == (
        FLAKY, "in", "crcr", "flaked 3 times in 14 days", True)
    assert quarantined_tests(db, "alpha", "ops") == {FLAKY}
    assert history.build({FLAKY: "flaky"}) == [], "already in: no second move"
    assert review_build(db, history.buildid, POLICY) == [], "the same build reviewed again moves nothing"
    assert len(recent_moves(db, "alpha")) == 1


def test_flakes_older_than_the_window_do_not_count(db):
    history = History(db)
    history.flakes(2)
    for _ in range(13):
        history.build()

    assert history.build({FLAKY: "flaky"}) == [], "the first two flaked 15 days before the third"


def test_a_bisection_build_moves_nothing_and_its_flakes_do_not_count(db):
    history = History(db)
    history.flakes(2)

    assert history.build({FLAKY: "flaky"}, kind="bisection") == []
    assert quarantined_tests(db, "alpha", "ops") == set()


def test_flakes_zero_quarantines_nothing_by_itself(db):
    history = History(db)

    assert [history.build({FLAKY: "flaky"}, policy=Policy(0, 14, 5)) for _ in range(5)] == [[]] * 5


def test_five_whole_runs_in_a_row_without_failing_release_it(db):
    history = History(db)
    history.flakes(3)
    history.build({FLAKY: "failed"})  # a bad run: the count starts again after it
    assert [history.build() for _ in range(4)] == [[]] * 4
    history.build(broken="exit code 3 (pytest internal error)")  # did not run whole: no clean run
    assert quarantined_of(db, "alpha")[0].clean_runs == 4

    (move,) = history.build({OTHER: "failed"})

    assert (move.test, move.move, move.who, move.why) == (FLAKY, "out", "crcr", "5 clean runs in a row")
    assert quarantined_of(db, "alpha") == []
    assert [m.move for m in recent_moves(db, "alpha")] == ["out", "in"]


def test_after_coming_out_only_new_flakes_count(db):
    history = History(db)
    history.flakes(3)
    for _ in range(5):
        history.build()

    assert history.flakes(2) == [], "the flakes before its release were counted already"
    assert [move.move for move in history.flakes(1)] == ["in"]


def test_moves_by_hand_are_recorded_with_who_and_why_and_count_clean_runs_from_then(db):
    history = History(db)
    history.build({FLAKY: "failed"})
    hand = Move("alpha", "ops", FLAKY, "in", "octocat", "fails on Tuesdays", at=history.buildid * DAY + 10,
                automatic=False)

    assert put_in(db, hand)
    assert not put_in(db, hand), "already in"
    history.build()
    (held,) = quarantined_of(db, "alpha")
    assert (held.who, held.why, held.clean_runs) == ("octocat", "fails on Tuesdays", 1)

    out = Move("alpha", "ops", FLAKY, "out", "admin", "fixed by #12", at=held.since + DAY, automatic=False)
    assert release(db, out)
    assert not release(db, out), "not in any more"
    assert recent_moves(db, "alpha") == [out, hand]


def test_clean_runs_count_from_entry_when_it_never_failed_after(db):
    history = History(db)
    for _ in range(3):
        history.build()

    assert clean_runs(db, "alpha", "ops", FLAKY, since=DAY) == 2


def test_pruning_keeps_the_moves_of_tests_still_in_quarantine(db):
    old = [Move("alpha", "ops", test, "in", "crcr", "flaked 3 times in 14 days", at=DAY, automatic=True)
           for test in (FLAKY, OTHER)]
    for move in old:
        put_in(db, move)
    release(db, Move("alpha", "ops", OTHER, "out", "crcr", "5 clean runs in a row", at=2 * DAY, automatic=True))

    assert prune(db, 3 * DAY) == 2

    assert recent_moves(db, "alpha") == [old[0]]
