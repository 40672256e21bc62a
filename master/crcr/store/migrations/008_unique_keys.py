"""Unique keys, so that two masters leading for a moment (a lease lapsing while its holder still acts) cannot
double the relay's work: one running bisection per (backend, good, bad), one step per (bisection, commit), one
waiting or sent GitHub post per (target, state) (store/outbox.py's state_key). The duplicates such a moment left
before are merged first, the oldest row staying:
- a later running bisection of the same range is abandoned (the oldest bisects the same commits and tests);
- a step's later rows of the same commit go, the oldest taking the outcome of the one that got furthest (decided,
  else the newest: the one whose build is still to come), so that the bisection finds its build's end;
- a later waiting post identical to an earlier one of its target goes. Delivered posts were not kept until now.

Revision ID: 008
Revises: 007
"""

import json
import time

import sqlalchemy as sa
from alembic import op

from crcr.store.outbox import state_key

revision = "008"
down_revision = "007"
branch_labels = None
depends_on = None

RUNNING = sa.text("state = 'running'")
NOT_GIVEN_UP = sa.text("given_up_at IS NULL")
UNDECIDED = ("pending", "interrupted")

bisections = sa.table("crcr_bisections", *map(sa.column, ("id", "backend", "good_sha", "bad_sha", "state",
                                                          "ended_at")))
steps = sa.table("crcr_bisection_steps", *map(sa.column, ("id", "bisectionid", "sha", "position", "brid", "buildid",
                                                         "tests", "outcome", "results", "ended_at")))
outbox = sa.table("crcr_github_outbox", *map(sa.column, ("id", "kind", "repo", "sha", "context", "brid", "payload",
                                                        "given_up_at", "state_key")))


def upgrade():
    conn = op.get_bind()
    _abandon_later_running_bisections(conn)
    _merge_steps_of_one_commit(conn)
    op.create_index("crcr_bisections_running_range", "crcr_bisections", ["backend", "good_sha", "bad_sha"],
                    unique=True, sqlite_where=RUNNING, postgresql_where=RUNNING)
    op.create_index("crcr_bisection_steps_commit", "crcr_bisection_steps", ["bisectionid", "sha"], unique=True)

    op.add_column("crcr_github_outbox", sa.Column("state_key", sa.String(64)))
    op.add_column("crcr_github_outbox", sa.Column("sent_at", sa.BigInteger))
    _key_and_dedupe_posts(conn)
    op.create_index("crcr_github_outbox_state_key", "crcr_github_outbox", ["state_key"], unique=True,
                    sqlite_where=NOT_GIVEN_UP, postgresql_where=NOT_GIVEN_UP)


def _abandon_later_running_bisections(conn):
    b = bisections.c
    oldest = (sa.select(sa.func.min(b.id)).where(b.state == "running")
              .group_by(b.backend, b.good_sha, b.bad_sha).scalar_subquery())
    conn.execute(bisections.update().where(b.state == "running", b.id.not_in(oldest))
                 .values(state="abandoned", ended_at=int(time.time())))


def _merge_steps_of_one_commit(conn):
    s = steps.c
    rows: dict[tuple, list] = {}
    for row in conn.execute(sa.select(steps).order_by(s.id)):
        rows.setdefault((row.bisectionid, row.sha), []).append(row)
    for same in rows.values():
        if len(same) < 2:
            continue
        kept, later = same[0], same[1:]
        decided = [row for row in same if row.outcome not in UNDECIDED]
        furthest = decided[-1] if decided else same[-1]
        conn.execute(steps.delete().where(s.id.in_([row.id for row in later])))
        if furthest is not kept:
            conn.execute(steps.update().where(s.id == kept.id).values(
                **{name: getattr(furthest, name) for name in ("position", "brid", "buildid", "tests", "outcome",
                                                              "results", "ended_at")}))


def _key_and_dedupe_posts(conn):
    o = outbox.c
    seen = set()
    for row in conn.execute(sa.select(outbox).order_by(o.id)).all():
        key = state_key(row.kind, row.repo, row.sha, row.context, row.brid, json.loads(row.payload))
        if row.given_up_at is None and key in seen:
            conn.execute(outbox.delete().where(o.id == row.id))
            continue
        if row.given_up_at is None:
            seen.add(key)
        conn.execute(outbox.update().where(o.id == row.id).values(state_key=key))
