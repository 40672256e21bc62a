"""The builds whose artifacts a later commit's build may reuse (store/builds_made.py).

Revision ID: 020
Revises: 019
"""

import sqlalchemy as sa
from alembic import op

revision = "020"
down_revision = "019"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_builds_made",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("builder", sa.String(50), nullable=False),
        sa.Column("recipe", sa.String(16), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("buildid", sa.Integer, nullable=False),
        sa.Column("made_at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_builds_made_commit", "crcr_builds_made", ["builder", "recipe", "sha"])
