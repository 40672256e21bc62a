"""The ledger of upstream commits, the bisections and their steps.

Revision ID: 001
Revises: none

A migration keeps the schema of its own time: the lengths are written out, not taken from the live limits.
"""

import sqlalchemy as sa
from alembic import op

revision = "001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_commits",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("seen_at", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.BigInteger),
        sa.Column("decided_at", sa.BigInteger),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("how", sa.String(16)),
        sa.Column("brid", sa.Integer),
        sa.Column("buildid", sa.Integer),
    )
    op.create_index("crcr_commits_backend_sha", "crcr_commits", ["backend", "sha"], unique=True)
    op.create_index("crcr_commits_brid", "crcr_commits", ["brid"])
    op.create_index("crcr_commits_backend_decided_at", "crcr_commits", ["backend", "decided_at"])

    op.create_table(
        "crcr_bisections",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("good_sha", sa.String(40), nullable=False),
        sa.Column("bad_sha", sa.String(40), nullable=False),
        sa.Column("trigger_buildid", sa.Integer),
        sa.Column("requested_by", sa.Text),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("ended_at", sa.BigInteger),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("plan", sa.Text, nullable=False),
        sa.Column("result", sa.Text),
    )

    op.create_table(
        "crcr_bisection_steps",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("bisectionid", sa.Integer, sa.ForeignKey("crcr_bisections.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("brid", sa.Integer),
        sa.Column("buildid", sa.Integer),
        sa.Column("tests", sa.Text, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("results", sa.Text),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("ended_at", sa.BigInteger),
    )
    op.create_index("crcr_bisection_steps_bisectionid", "crcr_bisection_steps", ["bisectionid"])
    op.create_index("crcr_bisection_steps_brid", "crcr_bisection_steps", ["brid"])
