"""PyTorch's disabled tests as the leader last fetched them (store/disabled_tests.py), one row every master and build
step reads; and a test's outcome 'disabled' in the history names its upstream issue.

Revision ID: 023
Revises: 022
"""

import sqlalchemy as sa
from alembic import op

revision = "023"
down_revision = "022"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_disabled_tests",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("etag", sa.Text),
        sa.Column("last_modified", sa.Text),
        sa.Column("fetched_at", sa.BigInteger),
        sa.Column("checked_at", sa.BigInteger),
        sa.Column("entries", sa.Text, nullable=False),
        sa.Column("problem", sa.Text),
    )
    op.add_column("crcr_test_outcomes", sa.Column("issue", sa.String(20)))
