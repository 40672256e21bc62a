"""Each run of a suite that hit the hardware, against its unit and card (store/infra_failures.py).

Revision ID: 015
Revises: 014
"""

import sqlalchemy as sa
from alembic import op

revision = "015"
down_revision = "014"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_infra_failures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("unit", sa.String(50), nullable=False),
        sa.Column("host", sa.String(50), nullable=False),
        sa.Column("device", sa.String(50), nullable=False),
        sa.Column("card", sa.String(300), nullable=True),
        sa.Column("backend", sa.String(50), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("buildid", sa.Integer, nullable=False),
        sa.Column("brid", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("what", sa.String(300), nullable=False),
        sa.Column("lines", sa.Text, nullable=False),
    )
    op.create_index("crcr_infra_failures_request", "crcr_infra_failures", ["brid"])
    op.create_index("crcr_infra_failures_unit", "crcr_infra_failures", ["unit", "at"])
