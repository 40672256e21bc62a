"""The issues the relay opened on backends' repositories, one per upstream commit that broke a backend
(store/culprit_issues.py)."""

from __future__ import annotations

import sqlalchemy as sa

from crcr.config.limits import MAX_NAME
from crcr.store.tables.github import REPO_LENGTH
from crcr.store.tables.schema import SHA_LENGTH, STATE_LENGTH, metadata

ISSUE_STATES = ("open", "closed")

# One row per (backend, culprit), written by the leader when it learns the culprit; kept after it is closed, so that
# the same culprit named again (a later bisection) adds to its issue rather than opening another.
culprit_issues = sa.Table(
    "crcr_culprit_issues",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),  # the upstream commit that broke it
    sa.Column("repo", sa.String(REPO_LENGTH), nullable=False),  # the backend's, where the issue is
    sa.Column("number", sa.Integer),  # GitHub's, once it answered the issue's creation
    sa.Column("tests", sa.Text, nullable=False),  # JSON: every '<suite>::<node id>' the issue told so far
    sa.Column("bisections", sa.Text, nullable=False),  # JSON: the ids of the bisections that named it
    sa.Column("state", sa.String(STATE_LENGTH), nullable=False),
    sa.Column("opened_at", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.BigInteger, nullable=False),
    sa.Column("closed_at", sa.BigInteger),
    sa.Index("crcr_culprit_issues_culprit", "backend", "sha", unique=True),
    sa.Index("crcr_culprit_issues_state", "backend", "state"),
)
