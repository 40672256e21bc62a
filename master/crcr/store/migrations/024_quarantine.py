"""The backends' flaky tests in quarantine and their moves in and out (store/quarantine.py).

Revision ID: 024
Revises: 023
"""

import sqlalchemy as sa
from alembic import op

revision = "024"
down_revision = "023"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_quarantined",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("suite", sa.String(40), nullable=False),
        sa.Column("test", sa.Text, nullable=False),
        sa.Column("test_hash", sa.String(64), nullable=False),
        sa.Column("since", sa.BigInteger, nullable=False),
        sa.Column("who", sa.String(40), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
    )
    op.create_index("crcr_quarantined_test", "crcr_quarantined", ["backend", "suite", "test_hash"], unique=True)
    op.create_table(
        "crcr_quarantine_moves",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("suite", sa.String(40), nullable=False),
        sa.Column("test", sa.Text, nullable=False),
        sa.Column("test_hash", sa.String(64), nullable=False),
        sa.Column("move", sa.String(16), nullable=False),
        sa.Column("who", sa.String(40), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("automatic", sa.Boolean, nullable=False),
    )
    op.create_index("crcr_quarantine_moves_backend_at", "crcr_quarantine_moves", ["backend", "at"])
    op.create_index("crcr_quarantine_moves_test", "crcr_quarantine_moves", ["backend", "suite", "test_hash"])
