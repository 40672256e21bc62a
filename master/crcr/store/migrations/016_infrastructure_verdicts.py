"""The ledger: whether a commit's error verdict was the hardware's (every try of a suite hit an infrastructure
failure, docs/hardware-failures.md), so that the health figures count it apart from the relay's own errors and
leave it out of the pass rate.

Revision ID: 016
Revises: 015
"""

import sqlalchemy as sa
from alembic import op

revision = "016"
down_revision = "015"
branch_labels = None
depends_on = None


def upgrade():
    # Verdicts recorded before: none was told apart, so none counts as the hardware's.
    op.add_column("crcr_commits", sa.Column("infrastructure", sa.Boolean, nullable=False, server_default=sa.false()))
