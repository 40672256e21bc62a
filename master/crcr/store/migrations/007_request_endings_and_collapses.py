"""What the masters must agree on about build requests, kept in the database rather than one master's memory:
why a request ended (the relay's reason for cancelling or stopping it, the person who did), and which newer request
an older one was approved to be collapsed into. Any master, or the same one after a restart, reads what another
wrote.

Revision ID: 007
Revises: 006
"""

import sqlalchemy as sa
from alembic import op

revision = "007"
down_revision = "006"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_request_endings",
        sa.Column("buildrequestid", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("reason", sa.Text),
        sa.Column("cancelled_by", sa.Text),
        sa.Column("noted_at", sa.BigInteger, nullable=False),
        sa.Index("crcr_request_endings_noted_at", "noted_at"),
    )
    op.create_table(
        "crcr_collapses",
        sa.Column("old_brid", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("new_brid", sa.Integer, nullable=False),
        sa.Column("approved_at", sa.BigInteger, nullable=False),
        sa.Index("crcr_collapses_approved_at", "approved_at"),
    )
