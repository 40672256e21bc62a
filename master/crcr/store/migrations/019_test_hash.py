"""The test history's tests indexed by a digest of their node ids (tables/history.py's test_hash), no longer by the
ids: a test chooses its id, and PostgreSQL refuses an index entry over ~2.7 KB, and with it the insert of the
build's every test. The ids stay whole in `test`.

Revision ID: 019
Revises: 018
"""

import sqlalchemy as sa
from alembic import op

from crcr.store.tables.history import TEST_HASH_LENGTH, test_hash

revision = "019"
down_revision = "018"
branch_labels = None
depends_on = None

outcomes = sa.table("crcr_test_outcomes", *map(sa.column, ("backend", "test", "test_hash")))


def upgrade():
    op.add_column("crcr_test_outcomes", sa.Column("test_hash", sa.String(TEST_HASH_LENGTH)))
    _hash_the_rows_kept()
    # Batch: SQLite makes a column NOT NULL only by copying the table; PostgreSQL alters it in place.
    with op.batch_alter_table("crcr_test_outcomes") as batch:
        batch.alter_column("test_hash", existing_type=sa.String(TEST_HASH_LENGTH), nullable=False)
        batch.drop_index("crcr_test_outcomes_backend_test")
        batch.create_index("crcr_test_outcomes_backend_test_hash", ["backend", "test_hash"])


def _hash_the_rows_kept():
    """One UPDATE per test of a backend, found through the old index while it is still there."""
    o = outcomes.c
    conn = op.get_bind()
    tests = conn.execute(sa.select(o.backend, o.test).distinct()).all()
    if tests:
        conn.execute(outcomes.update().where(o.backend == sa.bindparam("b_backend"), o.test == sa.bindparam("b_test"))
                     .values(test_hash=sa.bindparam("b_hash")),
                     [{"b_backend": backend, "b_test": test, "b_hash": test_hash(test)} for backend, test in tests])
