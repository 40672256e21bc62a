"""The GitHub webhook deliveries the relay acted on, by their X-GitHub-Delivery id.

Revision ID: 002
Revises: 001
"""

import sqlalchemy as sa
from alembic import op

revision = "002"
down_revision = "001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_webhook_deliveries",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("delivery", sa.String(64), nullable=False),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("received_at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_webhook_deliveries_delivery", "crcr_webhook_deliveries", ["delivery"], unique=True)
    op.create_index("crcr_webhook_deliveries_received_at", "crcr_webhook_deliveries", ["received_at"])
