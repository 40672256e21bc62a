"""PyTorch's disabled tests, as the leader last fetched them (store/disabled_tests.py): one row, the one list every
master and every suite's step reads."""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.tables.schema import metadata

disabled_tests = sa.Table(
    "crcr_disabled_tests",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),  # always LIST_ROW
    sa.Column("url", sa.Text, nullable=False),  # where the list was fetched from
    sa.Column("etag", sa.Text),  # its answer's validators, for the next conditional request
    sa.Column("last_modified", sa.Text),
    sa.Column("fetched_at", sa.BigInteger),  # when the entries were last read from an answer (200)
    sa.Column("checked_at", sa.BigInteger),  # when the host was last asked, whatever it answered
    sa.Column("entries", sa.Text, nullable=False),  # the last good list (suites/disabled_upstream.py's as_rows)
    sa.Column("problem", sa.Text),  # what went wrong at the last ask (null: nothing)
)
LIST_ROW = 1
