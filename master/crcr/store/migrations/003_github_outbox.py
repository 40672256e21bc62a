"""The GitHub outbox: every commit status and check run the relay wants GitHub to have, kept until GitHub took it;
and the ids GitHub gave the check runs, so that a restarted master updates a check run instead of making another.

Revision ID: 003
Revises: 002
"""

import sqlalchemy as sa
from alembic import op

revision = "003"
down_revision = "002"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_github_outbox",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("context", sa.String(255), nullable=False),
        sa.Column("brid", sa.Integer),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger, nullable=False),
        sa.Column("sending_since", sa.BigInteger),
        sa.Column("last_problem", sa.Text),
        sa.Column("given_up_at", sa.BigInteger),
    )
    op.create_index("crcr_github_outbox_target", "crcr_github_outbox", ["kind", "repo", "sha", "context", "brid"])
    op.create_index("crcr_github_outbox_next_attempt_at", "crcr_github_outbox", ["next_attempt_at"])

    op.create_table(
        "crcr_github_check_runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("brid", sa.Integer, nullable=False),
        sa.Column("check_run_id", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_github_check_runs_target", "crcr_github_check_runs", ["repo", "sha", "brid"], unique=True)
    op.create_index("crcr_github_check_runs_created_at", "crcr_github_check_runs", ["created_at"])
