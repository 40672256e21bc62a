"""The upstream events PyTorch's relay dispatched to each backend, so that the builds they bring report back to it
(store/dispatches.py).

Revision ID: 011
Revises: 010
"""

import sqlalchemy as sa
from alembic import op

revision = "011"
down_revision = "010"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_relay_dispatches",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("event_type", sa.String(40), nullable=False),
        sa.Column("delivery_id", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("received_at", sa.BigInteger, nullable=False),
        sa.Column("buildid", sa.Integer),
    )
    op.create_index("crcr_relay_dispatches_delivery", "crcr_relay_dispatches", ["backend", "delivery_id"], unique=True)
    op.create_index("crcr_relay_dispatches_commit", "crcr_relay_dispatches", ["backend", "sha"])
    op.create_index("crcr_relay_dispatches_received_at", "crcr_relay_dispatches", ["received_at"])
    op.create_index("crcr_relay_dispatches_buildid", "crcr_relay_dispatches", ["buildid"])
