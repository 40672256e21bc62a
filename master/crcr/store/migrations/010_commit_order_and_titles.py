"""The ledger's commits in upstream order, with their titles and authors: a forced build of an old commit was the
newest row, so the health figures took it for the backend's latest; and the Health tables showed bare shas.

`position` is the id of Buildbot's change that brought the commit (the earliest, when several did): changes are
recorded in the order upstream's pushes are seen, each push's commits oldest first. A commit no change brought
(forced, older than the relay's first poll) has none, and sorts before every commit that has one. The rows kept
so far take theirs from Buildbot's changes table, which the relay never prunes (Buildbot's changeHorizon is unset).

Revision ID: 010
Revises: 008
"""

import sqlalchemy as sa
from alembic import op

from crcr.store.commits import author_name, headline

revision = "010"
down_revision = "009"
branch_labels = None
depends_on = None

commits = sa.table("crcr_commits", *map(sa.column, ("id", "sha", "position", "title", "author")))
changes = sa.table("changes", *map(sa.column, ("changeid", "revision", "comments", "author")))


def upgrade():
    op.add_column("crcr_commits", sa.Column("position", sa.BigInteger))
    op.add_column("crcr_commits", sa.Column("title", sa.Text))
    op.add_column("crcr_commits", sa.Column("author", sa.Text))
    op.create_index("crcr_commits_backend_position", "crcr_commits", ["backend", "position"])
    conn = op.get_bind()
    if sa.inspect(conn).has_table("changes"):  # Buildbot's, beside the relay's on every master's database
        _positions_from_changes(conn)


def _positions_from_changes(conn):
    c, ch = commits.c, changes.c
    first = (sa.select(ch.revision, sa.func.min(ch.changeid).label("changeid"))
             .where(ch.revision.in_(sa.select(c.sha))).group_by(ch.revision).subquery())
    query = (sa.select(c.id, changes.c.changeid, ch.comments, ch.author)
             .join(first, first.c.revision == c.sha).join(changes, ch.changeid == first.c.changeid))
    for row in conn.execute(query).all():
        conn.execute(commits.update().where(c.id == row.id).values(
            position=row.changeid, title=headline(row.comments), author=author_name(row.author)))
