"""The backends' flaky tests in quarantine and every move in or out (store/quarantine.py, docs/backends.md)."""

from __future__ import annotations

import sqlalchemy as sa

from crcr.config.limits import MAX_NAME
from crcr.store.tables.history import TEST_HASH_LENGTH
from crcr.store.tables.schema import STATE_LENGTH, metadata

MOVES = ("in", "out")

# The tests in quarantine now, one row each: they run and are recorded, but decide no verdict. Never pruned.
quarantined = sa.Table(
    "crcr_quarantined",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("suite", sa.String(MAX_NAME), nullable=False),
    sa.Column("test", sa.Text, nullable=False),  # pytest's node id, whole
    sa.Column("test_hash", sa.String(TEST_HASH_LENGTH), nullable=False),  # tables/history.py test_hash
    sa.Column("since", sa.BigInteger, nullable=False),
    sa.Column("who", sa.String(MAX_NAME), nullable=False),  # "crcr", or the signed-in user who put it in
    sa.Column("why", sa.Text, nullable=False),
    # One row per test: a second writer (a build recorded twice, two masters leading for a moment) finds it there.
    sa.Index("crcr_quarantined_test", "backend", "suite", "test_hash", unique=True),
)

# Every move in or out, kept `history_days` but the last move of each test still in quarantine.
quarantine_moves = sa.Table(
    "crcr_quarantine_moves",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("suite", sa.String(MAX_NAME), nullable=False),
    sa.Column("test", sa.Text, nullable=False),
    sa.Column("test_hash", sa.String(TEST_HASH_LENGTH), nullable=False),
    sa.Column("move", sa.String(STATE_LENGTH), nullable=False),  # MOVES
    sa.Column("who", sa.String(MAX_NAME), nullable=False),
    sa.Column("why", sa.Text, nullable=False),
    sa.Column("at", sa.BigInteger, nullable=False),
    sa.Column("automatic", sa.Boolean, nullable=False),  # by the relay's counting, not by hand
    sa.Index("crcr_quarantine_moves_backend_at", "backend", "at"),
    sa.Index("crcr_quarantine_moves_test", "backend", "suite", "test_hash"),
)
