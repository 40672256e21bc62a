"""When a unit was last resumed after a look at its card: its infrastructure failures in a row count from then on
(store/infra_failures.py).

Revision ID: 017
Revises: 016
"""

import sqlalchemy as sa
from alembic import op

revision = "017"
down_revision = "016"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "crcr_unit_resumes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("workerid", sa.Integer, nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
    )
    op.create_index("crcr_unit_resumes_workerid", "crcr_unit_resumes", ["workerid"])
