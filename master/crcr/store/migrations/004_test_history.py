"""Test history: one row per finished build of a backend, its suites' counts, and each test that did not simply
pass in it (failed, errored, flaky; a bisection build's asked tests with every outcome), for the health pages,
badges, /metrics and `crcr status`. Kept for the `history_days` setting, then pruned by the janitor.

Revision ID: 004
Revises: 003
"""

import sqlalchemy as sa
from alembic import op

revision = "004"
down_revision = "003"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_builds",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("buildid", sa.Integer, nullable=False),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("builderid", sa.Integer, nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("results", sa.Integer, nullable=False),
        sa.Column("state_string", sa.Text),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("complete_at", sa.BigInteger, nullable=False),
        sa.Column("timed_out", sa.Boolean, nullable=False),
        sa.Column("pull_request", sa.Integer),
        sa.Column("pull_request_url", sa.Text),
        sa.Column("pull_request_title", sa.Text),
        sa.Column("bisectionid", sa.Integer),
    )
    op.create_index("crcr_builds_buildid", "crcr_builds", ["buildid"], unique=True)
    op.create_index("crcr_builds_backend_complete_at", "crcr_builds", ["backend", "complete_at"])
    op.create_index("crcr_builds_backend_sha", "crcr_builds", ["backend", "sha"])
    op.create_index("crcr_builds_complete_at", "crcr_builds", ["complete_at"])

    op.create_table(
        "crcr_suite_runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("buildid", sa.Integer, nullable=False),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("suite", sa.String(40), nullable=False),
        sa.Column("results", sa.Integer, nullable=False),
        sa.Column("passed", sa.Integer, nullable=False),
        sa.Column("failed", sa.Integer, nullable=False),
        sa.Column("errored", sa.Integer, nullable=False),
        sa.Column("flaky", sa.Integer, nullable=False),
        sa.Column("skipped", sa.Integer, nullable=False),
        sa.Column("xfailed", sa.Integer, nullable=False),
        sa.Column("new", sa.Integer, nullable=False),
        sa.Column("timed_out", sa.Boolean, nullable=False),
        sa.Column("complete_at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_suite_runs_buildid", "crcr_suite_runs", ["buildid"])
    op.create_index("crcr_suite_runs_backend_complete_at", "crcr_suite_runs", ["backend", "complete_at"])

    op.create_table(
        "crcr_test_outcomes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("buildid", sa.Integer, nullable=False),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("suite", sa.String(40), nullable=False),
        sa.Column("test", sa.Text, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("new", sa.Boolean, nullable=False),
        sa.Column("complete_at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_test_outcomes_buildid", "crcr_test_outcomes", ["buildid"])
    op.create_index("crcr_test_outcomes_backend_complete_at", "crcr_test_outcomes", ["backend", "complete_at"])
    op.create_index("crcr_test_outcomes_backend_test", "crcr_test_outcomes", ["backend", "test"])
