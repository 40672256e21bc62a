"""The issue opened on a backend's repository per upstream commit that broke it (store/culprit_issues.py).

Revision ID: 025
Revises: 024
"""

import sqlalchemy as sa
from alembic import op

revision = "025"
down_revision = "024"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_culprit_issues",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("backend", sa.String(40), nullable=False),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("number", sa.Integer),
        sa.Column("tests", sa.Text, nullable=False),
        sa.Column("bisections", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("opened_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("closed_at", sa.BigInteger),
    )
    op.create_index("crcr_culprit_issues_culprit", "crcr_culprit_issues", ["backend", "sha"], unique=True)
    op.create_index("crcr_culprit_issues_state", "crcr_culprit_issues", ["backend", "state"])
