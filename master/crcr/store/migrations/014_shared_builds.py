"""Each shared build made for an upstream commit, one row per (name, commit), so that every backend using it waits
for one build (store/shared_builds.py).

Revision ID: 014
Revises: 013
"""

import sqlalchemy as sa
from alembic import op

revision = "014"
down_revision = "013"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_shared_builds",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("brid", sa.Integer, nullable=True),
        sa.Column("claimed_at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_shared_builds_commit", "crcr_shared_builds", ["name", "sha"], unique=True)
