"""The ledger: whether a commit's first verdict was given unbuilt, as not relevant to the backend
(docs/relevance.md), so that a build forced later, which replaces the verdict but not its time (the latency's end),
leaves the commit out of the time to verdict as before.

Revision ID: 018
Revises: 017
"""

import sqlalchemy as sa
from alembic import op

revision = "018"
down_revision = "017"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("crcr_commits", sa.Column("decided_unbuilt", sa.Boolean, nullable=False,
                                            server_default=sa.false()))
    # Verdicts recorded before: those still not relevant, and those forced since, which only the ledger's
    # not-relevant decision leaves without a build request of their own (every other row comes with its request).
    commits = sa.table("crcr_commits", sa.column("how"), sa.column("brid"), sa.column("decided_at"),
                       sa.column("decided_unbuilt", sa.Boolean))
    op.execute(commits.update()
               .where(sa.or_(commits.c.how == "not_relevant",
                             sa.and_(commits.c.brid.is_(None), commits.c.decided_at.is_not(None))))
               .values(decided_unbuilt=True))
