"""The GitHub outbox's rows on a real SQLite file upgraded by the relay's migrations: what is due, in which order,
what a newer state replaces, what an attempt's outcome leaves, and what another master doing either meanwhile
leaves (that also on PostgreSQL; its round trip: test_store.py's)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from crcr.store.check_runs import check_run_id, remember_check_run
from crcr.store.migrate import upgrade_tables
from crcr.store.outbox import (
    CLAIM_EXPIRY,
    KEEP_GIVEN_UP,
    claim,
    delivered,
    due,
    enqueue,
    failed,
    give_up,
    next_due_at,
    postpone_all,
    released,
)
from crcr.store.outbox_view import given_up, waiting
from crcr.store.tables.github import github_outbox
from test_store import db, open_database  # noqa: F401  (the fixture: a SQLite database with the relay's tables)

REPO = "pytorch/pytorch"
A, B = "a" * 40, "b" * 40
ALPHA, BETA = "crcr/alpha", "crcr/beta"


def status(db, sha: str, state: str, now: float, context: str = ALPHA) -> int:
    return enqueue(db, "status", REPO, sha, context, {"state": state, "description": state}, now=now)


def states(rows) -> list[tuple[str, str, str]]:
    return [(r.sha[:1], r.context, r.payload.get("state") or r.payload.get("status")) for r in rows]


def test_rows_are_due_oldest_first_one_per_commit_and_context(db):
    status(db, A, "pending", now=100)
    status(db, B, "pending", now=101)
    being_sent = status(db, A, "pending", now=102, context=BETA)
    claim(db, being_sent, now=103)
    status(db, A, "success", now=104, context=BETA)  # waits behind the one being sent

    assert states(due(db, now=105, limit=10)) == [("a", ALPHA, "pending"), ("b", ALPHA, "pending")]
    assert states(due(db, now=105, limit=1)) == [("a", ALPHA, "pending")]
    assert due(db, now=99, limit=10) == [], "none falls due before it was written"


def test_a_newer_state_replaces_the_one_waiting_and_keeps_its_place_and_attempts(db):
    first = status(db, A, "pending", now=100)
    status(db, B, "pending", now=101)
    claim(db, first, now=102)
    failed(db, first, now=103, next_attempt_at=200, problem="HTTP 502")

    assert status(db, A, "failure", now=150) == first

    (row,) = [r for r in waiting(db) if r.sha == A]
    assert (row.payload["state"], row.created_at, row.updated_at) == ("failure", 100, 150)
    assert (row.attempts, row.next_attempt_at, row.last_problem) == (1, 200, "HTTP 502")
    assert states(due(db, now=200, limit=10)) == [("a", ALPHA, "failure"), ("b", ALPHA, "pending")]


def test_the_state_being_sent_is_not_replaced_the_newer_one_goes_after_it(db):
    pending = status(db, A, "pending", now=100)
    claim(db, pending, now=101)

    success = status(db, A, "success", now=102)

    assert success != pending
    assert states(waiting(db)) == [("a", ALPHA, "pending"), ("a", ALPHA, "success")]
    delivered(db, pending, outage_over_at=103)
    assert states(due(db, now=103, limit=10)) == [("a", ALPHA, "success")]


def test_a_claim_gives_the_state_that_replaced_the_one_read_as_due(db):
    row_id = status(db, A, "pending", now=100)
    (read,) = due(db, now=100, limit=10)
    assert status(db, A, "error", now=101) == row_id

    claimed = claim(db, read.id, now=101)

    assert states([claimed]) == [("a", ALPHA, "error")]
    assert claim(db, read.id, now=102) is None, "another sender may not take it"


def test_a_failed_attempt_whose_state_was_overtaken_hands_its_backoff_to_the_newer_state(db):
    pending = status(db, A, "pending", now=100)
    claim(db, pending, now=101)
    status(db, A, "success", now=102)

    failed(db, pending, now=103, next_attempt_at=120, problem="ConnectionRefusedError")

    (row,) = waiting(db)
    assert (row.payload["state"], row.attempts, row.next_attempt_at, row.created_at) == ("success", 1, 120, 100)
    assert due(db, now=119, limit=10) == []


def test_a_stop_releases_the_row_without_counting_an_attempt(db):
    row_id = status(db, A, "success", now=100)
    claim(db, row_id, now=101)

    released(db, row_id)

    (row,) = waiting(db)
    assert (row.attempts, row.sending_since) == (0, None)
    assert [r.id for r in due(db, now=101, limit=10)] == [row_id]


def test_the_claim_of_a_sender_that_died_lapses(db):
    row_id = status(db, A, "success", now=100)
    assert claim(db, row_id, now=100)
    assert not claim(db, row_id, now=101), "another sender may not take it"

    assert next_due_at(db) == 100 + CLAIM_EXPIRY
    assert due(db, now=99 + CLAIM_EXPIRY, limit=10) == []
    assert [r.id for r in due(db, now=100 + CLAIM_EXPIRY, limit=10)] == [row_id]
    assert status(db, A, "failure", now=100 + CLAIM_EXPIRY) == row_id, "no longer being sent: replaced"


def test_the_next_row_falls_due_at_the_earliest_attempt_of_the_rows_first_in_line(db):
    assert next_due_at(db) is None
    first = status(db, A, "pending", now=100)
    claim(db, first, now=100)
    failed(db, first, now=101, next_attempt_at=300, problem="HTTP 502")
    claimed = status(db, B, "pending", now=110)
    claim(db, claimed, now=110)
    status(db, B, "success", now=111)  # behind the claimed one: not what falls due

    assert next_due_at(db) == min(300, 110 + CLAIM_EXPIRY)


def test_a_rate_limit_postpones_every_row(db):
    soon, later = status(db, A, "pending", now=100), status(db, B, "pending", now=100)
    claim(db, later, now=100)
    failed(db, later, now=100, next_attempt_at=900, problem="HTTP 502")

    assert postpone_all(db, until=500, problem="rate limited until 500") == 1

    assert [(r.id, r.next_attempt_at) for r in waiting(db)] == [(soon, 500), (later, 900)]
    assert waiting(db)[0].last_problem == "rate limited until 500"


def test_a_delivery_sends_the_rows_waiting_out_an_outage_at_once_not_those_refused_for_their_own_reason(db):
    down, refused, sent = (status(db, sha, "pending", now=100) for sha in (A, B, "c" * 40))
    claim(db, down, now=100)
    failed(db, down, now=100, next_attempt_at=700, problem="HTTP 502", outage=True)
    claim(db, refused, now=100)
    failed(db, refused, now=100, next_attempt_at=700, problem="HTTP 401: Bad credentials")

    claim(db, sent, now=200)
    delivered(db, sent, outage_over_at=200.5)

    assert [(r.id, r.next_attempt_at, r.outage) for r in waiting(db)] == [(down, 201, False), (refused, 700, False)]
    assert [r.id for r in due(db, now=201, limit=10)] == [down]


def test_a_delivery_during_a_pause_github_asked_for_leaves_every_row_to_the_pause(db):
    down, sent = status(db, A, "pending", now=100), status(db, B, "pending", now=100)
    claim(db, down, now=100)
    failed(db, down, now=100, next_attempt_at=700, problem="HTTP 502", outage=True)
    postpone_all(db, until=1000, problem="rate limited until 1000")

    claim(db, sent, now=200)  # already on its way when the pause came
    delivered(db, sent, outage_over_at=200)

    assert [(r.id, r.next_attempt_at) for r in waiting(db)] == [(down, 1000)]


def test_a_row_given_up_is_kept_for_a_while_and_no_longer_holds_its_target_back(db):
    refused = status(db, A, "pending", now=100)
    claim(db, refused, now=100)
    status(db, A, "success", now=101)

    give_up(db, refused, now=102, problem="HTTP 422: Validation Failed")

    assert states(due(db, now=102, limit=10)) == [("a", ALPHA, "success")]
    (row,) = given_up(db, now=102)
    assert (row.id, row.given_up_at, row.attempts, row.last_problem) == (refused, 102, 1, "HTTP 422: Validation Failed")
    assert states(waiting(db)) == [("a", ALPHA, "success")]
    assert status(db, A, "failure", now=103) != refused, "a newer state never revives a given-up row"

    assert given_up(db, now=102 + KEEP_GIVEN_UP + 1) == [], "shown for a week"
    other = status(db, B, "pending", now=200 + KEEP_GIVEN_UP)
    give_up(db, other, now=200 + KEEP_GIVEN_UP, problem="HTTP 404")
    assert [r.id for r in given_up(db, now=0)] == [other], "the week-old one is gone from the table"


def test_check_runs_are_targets_of_their_own_per_build_request(db):
    enqueue(db, "check_run", REPO, A, ALPHA, {"status": "queued"}, now=100, brid=1)
    enqueue(db, "check_run", REPO, A, ALPHA, {"status": "queued"}, now=100, brid=2)
    enqueue(db, "check_run", REPO, A, ALPHA, {"status": "completed"}, now=101, brid=1)
    status(db, A, "pending", now=102)

    assert [(r.kind, r.brid, r.payload) for r in due(db, now=102, limit=10)] == [
        ("check_run", 1, {"status": "completed"}), ("check_run", 2, {"status": "queued"}),
        ("status", None, {"state": "pending", "description": "pending"})]
    assert [r.kind for r in due(db, now=102, limit=10, kinds=("status",))] == ["status"]


def test_a_check_runs_id_is_remembered_per_build_request(db):
    assert check_run_id(db, REPO, A, 1) is None

    remember_check_run(db, REPO, A, 1, 4242, now=100)

    assert (check_run_id(db, REPO, A, 1), check_run_id(db, REPO, A, 2), check_run_id(db, REPO, B, 1)) == (
        4242, None, None)


def test_an_unknown_kind_is_refused(db):
    with pytest.raises(ValueError, match="kind must be one of status, check_run"):
        enqueue(db, "comment", REPO, A, ALPHA, {}, now=100)


# --- identical posts: once, even from two masters leading for a moment ---


def test_an_identical_state_written_twice_is_one_row(db):
    first = status(db, A, "pending", now=100)

    assert status(db, A, "pending", now=101) == first, "the second master's write"
    claim(db, first, now=102)
    assert status(db, A, "pending", now=103) == first, "being sent: not sent again after it"
    assert states(waiting(db)) == [("a", ALPHA, "pending")]


def test_a_state_github_took_is_not_sent_again_and_a_different_later_one_is(db):
    pending = status(db, A, "pending", now=100)
    claim(db, pending, now=101)
    delivered(db, pending, outage_over_at=102)

    assert status(db, A, "pending", now=103) == pending
    assert waiting(db) == [], "GitHub has it"
    status(db, A, "success", now=104)
    status(db, A, "success", now=105)
    assert states(due(db, now=105, limit=10)) == [("a", ALPHA, "success")]


def test_a_state_github_had_before_another_replaced_it_goes_again_in_order(db):
    building = status(db, A, "pending", now=100)
    claim(db, building, now=101)
    delivered(db, building, outage_over_at=102)
    interrupted = enqueue(db, "status", REPO, A, ALPHA, {"state": "pending", "description": "Interrupted"}, now=103)
    claim(db, interrupted, now=104)

    again = status(db, A, "pending", now=105)  # the retry builds: GitHub must show 'pending' again

    assert again not in (building, interrupted)
    delivered(db, interrupted, outage_over_at=106)
    assert [(r.id, r.payload["description"]) for r in due(db, now=106, limit=10)] == [(again, "pending")]


def test_a_state_waiting_behind_the_one_github_has_goes_when_that_one_is_wanted_again(db):
    success = status(db, A, "success", now=100)
    claim(db, success, now=101)
    delivered(db, success, outage_over_at=102)
    status(db, A, "failure", now=103)

    assert status(db, A, "success", now=104) == success
    assert waiting(db) == [], "GitHub ends with success already"


def test_a_check_runs_identity_is_its_build_request_and_fields(db):
    queued = {"status": "queued", "details_url": "http://relay/#/builders/1/builds/1"}
    first = enqueue(db, "check_run", REPO, A, ALPHA, queued, now=100, brid=7)

    assert enqueue(db, "check_run", REPO, A, ALPHA, dict(queued), now=101, brid=7) == first
    other = enqueue(db, "check_run", REPO, A, ALPHA, queued, now=102, brid=8)
    assert other != first
    assert [(r.brid, r.payload["status"]) for r in due(db, now=103, limit=10)] == [(7, "queued"), (8, "queued")]


def test_a_given_up_state_does_not_hold_back_the_same_state_written_again(db):
    refused = status(db, A, "pending", now=100)
    claim(db, refused, now=101)
    give_up(db, refused, now=102, problem="HTTP 422")

    again = status(db, A, "pending", now=103)

    assert again != refused
    assert states(due(db, now=103, limit=10)) == [("a", ALPHA, "pending")]


# --- another master (or thread) acting on the same target at the same moment ---


@contextmanager
def meanwhile(conn, action):
    """`action`, done once on another connection right before `conn` next writes or locks rows: after the reads its
    writes follow from, as another master's sender or reporter may."""
    done = []

    def before(_conn, _cursor, statement, *_):
        writes = statement.split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE") or "FOR UPDATE" in statement
        if writes and not done:
            done.append(action())

    sa.event.listen(conn, "before_cursor_execute", before)
    try:
        yield done
    finally:
        sa.event.remove(conn, "before_cursor_execute", before)
    assert done, "the call wrote nothing"


def posted_until_none_is_due(conn, now: float) -> list[str]:
    """What a sender posts, in order, of what is due: each state as its claim gives it."""
    posted = []
    while rows := due(conn, now=now, limit=1):
        row = claim(conn, rows[0].id, now=now)
        posted.append(row.payload["state"])
        delivered(conn, row.id, outage_over_at=now)
    return posted


def a_claim_as_a_newer_state_replaces_the_waiting_one(db, other):
    pending = status(db, A, "pending", now=100)

    with meanwhile(db, lambda: claim(other, pending, now=101)) as claimed:
        status(db, A, "success", now=101)
    (sending,) = claimed

    assert sending.payload["state"] == "pending"
    delivered(other, sending.id, outage_over_at=102)
    assert posted_until_none_is_due(db, now=102) == ["success"], "the newer state waited behind the one sent"


def a_claim_as_the_state_github_has_is_wanted_again(db, other):
    success = status(db, A, "success", now=100)
    claim(db, success, now=100)
    delivered(db, success, outage_over_at=100)
    failure = status(db, A, "failure", now=101)

    with meanwhile(db, lambda: claim(other, failure, now=102)) as claimed:
        status(db, A, "success", now=102)
    (sending,) = claimed

    delivered(other, sending.id, outage_over_at=103)
    assert posted_until_none_is_due(db, now=103) == ["success"], "GitHub ends with success, not the failure sent"


def a_failed_attempt_as_its_state_is_wanted_again(db, other):
    pending = status(db, A, "pending", now=100)
    claim(db, pending, now=100)
    status(db, A, "success", now=101)  # waits behind the one being sent

    with meanwhile(db, lambda: status(other, A, "pending", now=102)):  # the one being sent will do
        failed(db, pending, now=103, next_attempt_at=104, problem="HTTP 502")

    assert posted_until_none_is_due(db, now=104) == ["pending"]


RACES = [a_claim_as_a_newer_state_replaces_the_waiting_one, a_claim_as_the_state_github_has_is_wanted_again,
         a_failed_attempt_as_its_state_is_wanted_again]


@pytest.mark.parametrize("race", RACES)
def test_a_state_written_or_claimed_by_another_master_at_the_same_moment_is_not_lost(db, race):
    other = db.engine.connect()
    try:
        race(db, other)
    finally:
        other.close()


@pytest.mark.e2e
def test_no_state_is_lost_to_another_master_acting_at_the_same_moment_on_postgresql(tmp_path, postgres):
    db = open_database(postgres.url, tmp_path)
    other = db.engine.connect()
    try:
        upgrade_tables(db)
        for race in RACES:
            db.execute(github_outbox.delete())
            db.commit()
            race(db, other)
    finally:
        other.close()
        db.close()
