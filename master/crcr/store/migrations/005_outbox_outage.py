"""The GitHub outbox: whether a row waits out the back-off of an outage, which GitHub's next success ends (rather
than each post's own doubled wait, up to the longest, after GitHub came back).

Revision ID: 005
Revises: 004
"""

import sqlalchemy as sa
from alembic import op

revision = "005"
down_revision = "004"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("crcr_github_outbox", sa.Column("outage", sa.Boolean, nullable=False, server_default=sa.false()))
