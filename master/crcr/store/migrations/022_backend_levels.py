"""Each change of a backend's configured level, for how long it has been at L2 (store/levels.py).

Revision ID: 022
Revises: 021
"""

import sqlalchemy as sa
from alembic import op

revision = "022"
down_revision = "021"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_backend_levels",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("level", sa.String(2), nullable=False),
        sa.Column("since", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_backend_levels_backend", "crcr_backend_levels", ["backend", "since"])
