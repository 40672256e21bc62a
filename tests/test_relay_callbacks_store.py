"""Callbacks to PyTorch's relay in the outbox, and the dispatches builds answer, on a real SQLite file upgraded by
the relay's migrations: every state of a callback goes, in order, none replacing another; GitHub's answers do not
move the relay's rows; each dispatch is answered by one build."""

from __future__ import annotations

from crcr.store.dispatches import KEEP_SECONDS, answer_dispatches, answered_by, record_dispatch, release_dispatches
from crcr.store.outbox import claim, delivered, due, enqueue, failed, postpone_all
from crcr.store.outbox_view import waiting
from test_store import db  # noqa: F401  (the fixture: a SQLite database with the relay's tables)

DOWNSTREAM = "torch-spyre/torch-spyre"
A, B = "a" * 40, "b" * 40
DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"


def callback(db, status: str, now: float, delivery: str = DELIVERY, buildid: int = 7) -> int:
    body = {"event_type": "pull_request", "delivery_id": delivery,
            "workflow": {"status": status, "run_id": str(buildid)}}
    return enqueue(db, "callback", DOWNSTREAM, A, delivery, body, now=now, brid=buildid)


def statuses(rows) -> list[str]:
    return [r.payload["workflow"]["status"] for r in rows]


def test_a_completed_callback_waits_behind_its_in_progress_and_replaces_nothing(db):
    in_progress = callback(db, "in_progress", now=100)
    claim(db, in_progress, now=101)
    failed(db, in_progress, now=102, next_attempt_at=200, problem="HTTP 502", outage=True)

    completed = callback(db, "completed", now=150)

    assert completed != in_progress
    assert statuses(waiting(db)) == ["in_progress", "completed"]
    assert statuses(due(db, now=200, limit=10)) == ["in_progress"], "completed goes only once in_progress went"
    claim(db, in_progress, now=200)
    delivered(db, in_progress, outage_over_at=201)
    assert statuses(due(db, now=201, limit=10)) == ["completed"]


def test_the_same_callback_written_twice_is_one_row(db):
    assert callback(db, "in_progress", now=100) == callback(db, "in_progress", now=100)
    assert len(waiting(db)) == 1


def test_github_and_pytorchs_relay_keep_their_own_outages_and_pauses(db):
    status = enqueue(db, "status", "pytorch/pytorch", B, "crcr/spyre", {"state": "pending"}, now=100)
    relay_down = callback(db, "in_progress", now=100)
    for row in (status, relay_down):
        claim(db, row, now=101)
        failed(db, row, now=102, next_attempt_at=900, problem="HTTP 502", outage=True)
    other = enqueue(db, "status", "pytorch/pytorch", A, "crcr/spyre", {"state": "pending"}, now=103)
    claim(db, other, now=104)

    delivered(db, other, outage_over_at=105, kinds=("status", "check_run"))  # GitHub answers again

    assert [r.kind for r in due(db, now=105, limit=10)] == ["status"], "the relay's outage is not over for it"
    assert postpone_all(db, until=2000, problem="rate limited", kinds=("callback",)) == 1
    (row,) = [r for r in waiting(db) if r.kind == "status"]
    assert row.next_attempt_at == 105, "a pause the relay asked for holds no GitHub post"


def test_a_starting_build_answers_the_dispatches_of_its_commit_once(db):
    assert record_dispatch(db, "spyre", A, "pull_request", DELIVERY, {"head_sha": A}, received_at=100)
    assert not record_dispatch(db, "spyre", A, "pull_request", DELIVERY, {"head_sha": A}, received_at=101)
    record_dispatch(db, "spyre", A, "push", "push-delivery", {"head_sha": A}, received_at=102)
    record_dispatch(db, "spyre", B, "push", "other-commit", {"head_sha": B}, received_at=103)
    record_dispatch(db, "other", A, "push", "other-backend", {"head_sha": A}, received_at=103)

    answered = answer_dispatches(db, "spyre", [A], buildid=7)

    assert [(d.event_type, d.delivery_id) for d in answered] == [("pull_request", DELIVERY), ("push", "push-delivery")]
    assert answer_dispatches(db, "spyre", [A], buildid=8) == [], "a later build of the commit answers none of them"
    assert answer_dispatches(db, "spyre", [A], buildid=7) == answered, "the same start reported again: the same"
    assert answered_by(db, 7) == answered


def test_a_build_covering_commits_answers_their_dispatches_too(db):
    record_dispatch(db, "spyre", A, "push", "first-push", {}, received_at=100)
    record_dispatch(db, "spyre", B, "push", "second-push", {}, received_at=101)

    assert [d.delivery_id for d in answer_dispatches(db, "spyre", [B, A], buildid=7)] == ["first-push", "second-push"]


def test_a_retried_build_leaves_its_dispatches_to_the_next_build(db):
    record_dispatch(db, "spyre", A, "pull_request", DELIVERY, {}, received_at=100)
    answer_dispatches(db, "spyre", [A], buildid=7)

    release_dispatches(db, 7)

    assert answered_by(db, 7) == []
    assert [d.delivery_id for d in answer_dispatches(db, "spyre", [A], buildid=8)] == [DELIVERY]


def test_dispatches_older_than_pytorchs_relay_keeps_them_are_dropped(db):
    record_dispatch(db, "spyre", A, "pull_request", DELIVERY, {}, received_at=100)
    record_dispatch(db, "spyre", B, "push", "later", {}, received_at=100 + KEEP_SECONDS + 1)

    assert answer_dispatches(db, "spyre", [A], buildid=7) == []
