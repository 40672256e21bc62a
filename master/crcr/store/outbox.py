"""The GitHub outbox: each commit status and check run the relay wants GitHub to have, written before anything is
sent and deleted only once GitHub took it, so that neither an outage nor a master's crash loses one
(github/outbox_sender.py delivers them, outbox_view.py shows them).

A target is what GitHub keeps one state of: a commit status (repo, sha, context), a check run (repo, sha, name,
build request). Its rows go out in the order they were written, one at a time; a newer state replaces the one
waiting, so that only the newest is sent (a final replaces a pending never sent), except the row a sender is
sending right now: the newer state then waits behind it. A sender claims a row while sending it; the claim of a
sender that died mid-attempt (kill -9) lapses after CLAIM_EXPIRY. Whatever decides from a target's rows which to
replace, keep or delete holds them first (_hold_target), so that a claim, an attempt's end or a newer state
written meanwhile, by another thread or master, waits for it rather than being undone by it.

A callback to PyTorch's relay (kind `callback`; its target a dispatch's delivery and build) is delivered state by
state: no newer state replaces one waiting, since that relay takes a build's `completed` only after its
`in_progress`.

So is a culprit's issue (kind `issue`; its target the backend's repository, the culprit and the backend): its
opening, each comment and each change of its state, in order.

A row GitHub refused for good (a 4xx that retrying cannot mend) stays, marked given up, for KEEP_GIVEN_UP, so
that `crcr status --outbox` can show it; it no longer holds back its target's newer rows.

A row whose last try found GitHub down (`outage`) waits out its back-off only until GitHub takes a post again: the
outage is over for every row then, not for each at its own doubled wait. A row refused for a reason of its own (a
401) keeps its wait, and a pause GitHub asked for (postpone_all) holds whatever succeeds meanwhile.

An identical post is made once, even by two masters leading for a moment: a state identical to the newest its
target has (waiting, being sent, or the last GitHub took, kept KEEP_SENT) is not written again. Identical means the
same target and the same payload: for a commit status its repo, sha, context, state, description and target_url;
for a check run its repo, sha, name and build request, and every field it sends (status, conclusion, output,
details_url). A unique key on state_key (a digest of both) holds one row per (target, state) besides the given up
ones, so that of two masters writing the same state at once the second writes nothing. A different state still
goes out after the ones before it, in order; so does a state GitHub had before another replaced it.

Rows hold what GitHub must get, never a token. Times are epoch seconds (the master's clock). Each function takes a
SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from crcr.store.inserts import insert_unless_present
from crcr.store.tables.github import OUTBOX_KINDS, github_outbox
from crcr.store.tables.schema import check_value

CLAIM_EXPIRY = 60  # seconds; above the sender's attempt timeout (30 s)
KEEP_GIVEN_UP = 7 * 24 * 3600
KEEP_SENT = 24 * 3600  # a target's last delivered state, refused again for this long: longer than any takeover

EVERY_STATE_KINDS = ("callback", "issue")  # kinds whose every state is delivered, none replacing another

_o = github_outbox.c


@dataclass(frozen=True)
class OutboxRow:
    id: int
    kind: str  # status | check_run | callback | issue
    repo: str  # owner/name
    sha: str
    context: str  # the status's context, the check run's name
    brid: int | None  # a check run's build request
    payload: Any  # what GitHub gets: a status's fields, or a check run's (without its name, sha and external id)
    created_at: int
    updated_at: int  # when its payload was last replaced by a newer state
    attempts: int  # posts GitHub did not take
    next_attempt_at: int
    outage: bool  # its wait is an outage's back-off, which GitHub's next success ends
    sending_since: int | None
    last_problem: str | None
    given_up_at: int | None
    state_key: str | None
    sent_at: int | None  # GitHub took it: its target's last state, no longer waiting


def outbox_row(r) -> OutboxRow:
    """A row of the table as an OutboxRow, its payload decoded."""
    return OutboxRow(**{**r._mapping, "payload": json.loads(r.payload)})


def state_key(kind: str, repo: str, sha: str, context: str, brid: int | None, payload: dict) -> str:
    """What two identical posts share (the module's docstring says what identical means): a digest, the unique key
    being one column (a status's missing build request, a NULL, would make a key of the target's columns never
    match)."""
    identity = json.dumps([kind, repo, sha, context, brid, payload], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(identity.encode()).hexdigest()


def unsent():
    """Rows waiting for GitHub: neither taken by it nor given up."""
    return sa.and_(_o.given_up_at.is_(None), _o.sent_at.is_(None))


def _same_target(kind: str, repo: str, sha: str, context: str, brid: int | None):
    return sa.and_(_o.kind == kind, _o.repo == repo, _o.sha == sha, _o.context == context,
                   _o.brid.is_not_distinct_from(brid))


def _being_sent(now: float):
    return sa.and_(_o.sending_since.is_not(None), _o.sending_since > int(now) - CLAIM_EXPIRY)


def enqueue(conn, kind: str, repo: str, sha: str, context: str, payload: dict, now: float,
            brid: int | None = None, not_before: float = 0) -> int:
    """The newest state of a target to deliver, not before `not_before` (a pause GitHub asked for); the id of its
    row. It replaces the target's state still waiting (keeping that row's place, attempts and next attempt: GitHub's
    trouble is no newer for it). A state GitHub has, or is being sent, with nothing sent after it, is not written
    again: the states waiting after it go instead."""
    check_value("kind", kind, OUTBOX_KINDS)
    key = state_key(kind, repo, sha, context, brid, payload)
    if kind in EVERY_STATE_KINDS:  # after the states written before it, once
        row_id = _insert(conn, kind, repo, sha, context, brid, payload, key, now, not_before)
        conn.commit()
        return row_id
    target = _same_target(kind, repo, sha, context, brid)
    _hold_target(conn, target)
    rows = conn.execute(
        sa.select(_o.id, _o.state_key, _o.sent_at, _being_sent(now).label("being_sent"))
        .where(target, _o.given_up_at.is_(None)).order_by(_o.id)
    ).all()
    same = next((row for row in rows if row.state_key == key), None)
    if same is not None:
        later = [row for row in rows if row.id > same.id]
        if not any(row.being_sent for row in later):  # GitHub ends with this state already
            conn.execute(github_outbox.delete().where(_o.id.in_([row.id for row in later])))
            conn.commit()
            return same.id
        # Sent before, and another state is being sent after it: it goes again, in a row of its own.
        conn.execute(github_outbox.delete().where(_o.id == same.id))
    waiting = [row.id for row in rows if row.sent_at is None and not row.being_sent and row is not same]
    values = {"payload": json.dumps(payload), "updated_at": int(now), "state_key": key}
    if waiting:
        row_id, *older_states = waiting  # more than one only after a sender died mid-attempt
        conn.execute(github_outbox.update().where(_o.id == row_id).values(**values, sending_since=None))
        conn.execute(github_outbox.delete().where(_o.id.in_(older_states)))
    else:
        row_id = _insert(conn, kind, repo, sha, context, brid, payload, key, now, not_before)
    conn.commit()
    return row_id


def _hold_target(conn, target) -> None:
    """Holds the target's rows until the caller commits, before it reads them: what it decides from them (which row
    waits, which one a sender has) stays true until it wrote. Otherwise a sender's claim between the two would send
    a state the caller then replaced in place, and mark the newer one delivered."""
    if conn.dialect.name == "sqlite":  # the whole file, held from a first write on, even one that changes nothing
        conn.execute(github_outbox.update().where(sa.false()).values(kind=_o.kind))
    else:  # PostgreSQL: the rows, in the order every holder takes them, so that two never wait on each other
        conn.execute(sa.select(_o.id).where(target).order_by(_o.id).with_for_update()).all()


def _insert(conn, kind, repo, sha, context, brid, payload, key, now, not_before) -> int:
    """A new row of this state; the row of another master that wrote the same state meanwhile, if one did."""
    row_id = insert_unless_present(
        conn, github_outbox, kind=kind, repo=repo, sha=sha, context=context, brid=brid, created_at=int(now),
        updated_at=int(now), attempts=0, next_attempt_at=math.ceil(max(now, not_before)), state_key=key,
        payload=json.dumps(payload))
    if row_id is None:
        row_id = conn.execute(sa.select(_o.id).where(_o.state_key == key, _o.given_up_at.is_(None))).scalar_one()
    return row_id


def _first_of_its_target():
    """Rows that no earlier waiting row of the same target holds back."""
    earlier = github_outbox.alias("earlier")
    return ~sa.exists().where(
        earlier.c.given_up_at.is_(None), earlier.c.sent_at.is_(None), earlier.c.kind == _o.kind, earlier.c.repo == _o.repo,
        earlier.c.sha == _o.sha, earlier.c.context == _o.context, earlier.c.brid.is_not_distinct_from(_o.brid),
        earlier.c.id < _o.id,
    )


def due(conn, now: float, limit: int, kinds: tuple[str, ...] = OUTBOX_KINDS) -> list[OutboxRow]:
    """Up to `limit` rows to send now, oldest first: each the first of its target, its time come, not being sent."""
    rows = conn.execute(
        sa.select(github_outbox)
        .where(_o.kind.in_(kinds), unsent(), _o.next_attempt_at <= int(now),
               sa.not_(_being_sent(now)), _first_of_its_target())
        .order_by(_o.id)
        .limit(limit)
    ).all()
    return [outbox_row(r) for r in rows]


def next_due_at(conn, kinds: tuple[str, ...] = OUTBOX_KINDS) -> int | None:
    """When the next row falls due (a claimed one when its claim lapses); None when nothing waits."""
    lapses = _o.sending_since + CLAIM_EXPIRY
    when = sa.case((_o.sending_since.is_(None), _o.next_attempt_at), (lapses > _o.next_attempt_at, lapses),
                   else_=_o.next_attempt_at)
    return conn.execute(
        sa.select(sa.func.min(when)).where(_o.kind.in_(kinds), unsent(), _first_of_its_target())
    ).scalar()


def claim(conn, row_id: int, now: float) -> OutboxRow | None:
    """Marks the row as being sent by the caller, and gives it as claimed: the state to send, which may be newer
    than the one due() gave (a newer state replaces a waiting one in its row), and stays while claimed. None when
    the row is gone, given up, or another sender has it."""
    claimed = conn.execute(
        github_outbox.update()
        .where(_o.id == row_id, unsent(), sa.not_(_being_sent(now)))
        .values(sending_since=int(now))
    ).rowcount
    row = conn.execute(sa.select(github_outbox).where(_o.id == row_id)).first() if claimed == 1 else None
    conn.commit()
    return None if row is None else outbox_row(row)


def delivered(conn, row_id: int, outage_over_at: float, kinds: tuple[str, ...] = OUTBOX_KINDS) -> None:
    """GitHub took it, so it answers again: the rows of `kinds` (those the same service takes) waiting out an
    outage's back-off fall due at `outage_over_at` (now, or the end of a pause GitHub asked for), each still behind
    its target's earlier rows (due()). The row stays, sent, as its target's last state (for KEEP_SENT from
    `outage_over_at`), replacing the one sent before."""
    now = outage_over_at
    row = conn.execute(sa.select(github_outbox).where(_o.id == row_id)).first()
    if row is not None:
        conn.execute(github_outbox.delete().where(
            _same_target(row.kind, row.repo, row.sha, row.context, row.brid), _o.sent_at.is_not(None)))
        conn.execute(github_outbox.update().where(_o.id == row_id).values(sent_at=int(now), sending_since=None))
    conn.execute(github_outbox.delete().where(_o.sent_at < int(now) - KEEP_SENT))
    when = math.ceil(outage_over_at)
    conn.execute(github_outbox.update()
                 .where(_o.kind.in_(kinds), _o.outage, unsent(), _o.next_attempt_at > when)
                 .values(next_attempt_at=when, outage=False))
    conn.commit()


def failed(conn, row_id: int, now: float, next_attempt_at: float, problem: str, outage: bool = False) -> None:
    """GitHub did not take it (yet): another attempt at `next_attempt_at`, or GitHub's next success when `outage`
    (GitHub down: 5xx, no answer, no connection). When a newer state of its target came meanwhile, that one is what
    the next attempt sends."""
    _settle(conn, row_id, lambda row: {"attempts": row.attempts + 1, "next_attempt_at": int(next_attempt_at),
                                       "outage": outage, "last_problem": problem, "sending_since": None})


def released(conn, row_id: int) -> None:
    """The attempt was cut short by the sender's stop: not an attempt GitHub answered."""
    _settle(conn, row_id, lambda row: {"sending_since": None})


def _settle(conn, row_id: int, values) -> None:
    # Held before the newer state is read: one written meanwhile may delete it (this row's state wanted again).
    row = _held_row(conn, row_id)
    if row is not None:
        target = _same_target(row.kind, row.repo, row.sha, row.context, row.brid)
        newer = None if row.kind in EVERY_STATE_KINDS else conn.execute(
            sa.select(_o.id).where(target, unsent(), _o.id > row_id).order_by(_o.id.desc())).scalars().first()
        keep = row_id if newer is None else newer
        conn.execute(github_outbox.update().where(_o.id == keep).values(**values(row)))
        if newer is not None:  # its place, attempts and next attempt go to the newer state
            conn.execute(github_outbox.update().where(_o.id == newer).values(created_at=row.created_at))
            conn.execute(github_outbox.delete().where(_o.id == row_id))
    conn.commit()


def _held_row(conn, row_id: int):
    """The row, read once its target is held (_hold_target); None when it is gone."""
    target = conn.execute(sa.select(_o.kind, _o.repo, _o.sha, _o.context, _o.brid).where(_o.id == row_id)).first()
    if target is None:
        return None
    _hold_target(conn, _same_target(*target))
    return conn.execute(sa.select(github_outbox).where(_o.id == row_id)).first()


def give_up(conn, row_id: int, now: float, problem: str) -> None:
    """GitHub refused it for good; kept, as given up, for KEEP_GIVEN_UP."""
    conn.execute(github_outbox.delete().where(_o.given_up_at < int(now) - KEEP_GIVEN_UP))
    conn.execute(github_outbox.update().where(_o.id == row_id).values(
        attempts=_o.attempts + 1, given_up_at=int(now), last_problem=problem, sending_since=None))
    conn.commit()


def postpone_all(conn, until: float, problem: str, kinds: tuple[str, ...] = OUTBOX_KINDS) -> int:
    """GitHub asked for a pause from every post (a rate limit): no row of `kinds` (those the same service takes) is
    tried before `until`, not even once a post succeeds meanwhile (the rows moved wait for the pause now, not an
    outage's back-off); how many moved."""
    moved = conn.execute(
        github_outbox.update()
        .where(_o.kind.in_(kinds), unsent(), _o.next_attempt_at < int(until))
        .values(next_attempt_at=int(until), outage=False, last_problem=problem)
    ).rowcount
    conn.commit()
    return moved
