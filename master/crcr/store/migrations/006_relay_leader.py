"""The relay's leader among several masters: which master holds the lease of the relay's once-per-event duties
(the ledger and bisector, the history, the stale watch, the build requests' statuses), and until when.

Revision ID: 006
Revises: 005
"""

import sqlalchemy as sa
from alembic import op

revision = "006"
down_revision = "005"
branch_labels = None
depends_on = None


def upgrade():
    leader = op.create_table(
        "crcr_leader",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("masterid", sa.Integer),
        sa.Column("master_name", sa.Text),
        sa.Column("since", sa.BigInteger),
        sa.Column("renewed_at", sa.BigInteger),
    )
    op.bulk_insert(leader, [{"id": 1}])
