"""Each job a build ran for PyTorch's relay and HUD, one per suite or shard and attempt (store/relay_jobs.py).

Revision ID: 021
Revises: 020
"""

import sqlalchemy as sa
from alembic import op

revision = "021"
down_revision = "020"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_relay_jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("job_name", sa.String(255), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("buildid", sa.Integer, nullable=False),
        sa.Column("queued_at", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.BigInteger),
        sa.Column("completed_at", sa.BigInteger),
        sa.Column("conclusion", sa.String(16)),
        sa.Column("told_up_to", sa.Integer, nullable=False, server_default="0"),
        sa.Column("workflow", sa.Text),
    )
    op.create_index("crcr_relay_jobs_attempt", "crcr_relay_jobs", ["run_id", "job_name", "attempt"], unique=True)
    op.create_index("crcr_relay_jobs_backend", "crcr_relay_jobs", ["backend", "queued_at"])
