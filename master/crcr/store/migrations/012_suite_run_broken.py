"""The test history: why a suite run did not run whole (files it could not collect, a timeout, a crash; null when it
did), so that the health figures neither end nor date a test's failing streak at a run that never ran the test.

Revision ID: 012
Revises: 011
"""

import sqlalchemy as sa
from alembic import op

revision = "012"
down_revision = "011"
branch_labels = None
depends_on = None


def upgrade():
    # Runs recorded before: taken as whole, as the figures took them.
    op.add_column("crcr_suite_runs", sa.Column("broken", sa.Text))
