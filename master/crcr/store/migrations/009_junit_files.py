"""Each suite's JUnit XML exactly as the worker wrote it, one row per (build, suite), served beside the build page
(the step's link): Buildbot's logs cut lines at 4,096 characters, so the XML a log held was not the worker's file.
Kept for the `history_days` setting, as the test history is.

Revision ID: 009
Revises: 008
"""

import sqlalchemy as sa
from alembic import op

revision = "009"
down_revision = "008"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_junit_files",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("buildid", sa.Integer, nullable=False),
        sa.Column("stepid", sa.Integer, nullable=False),
        sa.Column("suite", sa.String(40), nullable=False),
        sa.Column("content", sa.LargeBinary, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("stored_at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_junit_files_build_suite", "crcr_junit_files", ["buildid", "suite"], unique=True)
    op.create_index("crcr_junit_files_stored_at", "crcr_junit_files", ["stored_at"])
