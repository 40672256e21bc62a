"""The build slots of hosts capped by max_builds, claimed in the database so that two masters cannot both take a
host's last slot (store/host_slots.py).

Revision ID: 013
Revises: 012
"""

import sqlalchemy as sa
from alembic import op

revision = "013"
down_revision = "012"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_host_slots",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("host", sa.String(50), nullable=False),
        sa.Column("slot", sa.Integer, nullable=False),
        sa.Column("workerid", sa.Integer, nullable=False),
        sa.Column("masterid", sa.Integer, nullable=False),
    )
    op.create_index("crcr_host_slots_slot", "crcr_host_slots", ["host", "slot"], unique=True)
    op.create_index("crcr_host_slots_workerid", "crcr_host_slots", ["workerid"], unique=True)
