"""The ledger: one row per (backend, upstream commit), from its arrival to its final verdict, for the verdicts of
commits not built alone and for commit-to-verdict latency.

Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and commits what it writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.tables.ledger import HOW_DECIDED, INFRASTRUCTURE, NOT_RELEVANT, VERDICTS, commits
from crcr.store.tables.schema import check_value


@dataclass(frozen=True)
class CommitRow:
    id: int
    backend: str
    sha: str
    branch: str
    seen_at: int  # when the relay first saw the commit
    started_at: int | None  # when its own build, or the build covering it, first started
    decided_at: int | None  # when its final verdict was posted; None while pending
    state: str  # pending | success | failure | error
    description: str | None  # the text of its GitHub status
    how: str | None  # built | covered | bisected | forced | not_relevant, once decided
    brid: int | None  # the build request that builds or covers it
    buildid: int | None  # the build that decided it
    position: int | None = None  # upstream order (tables/ledger.py); None: older than every commit that has one
    title: str | None = None  # the first line of its message, when the relay knows it
    author: str | None = None
    infrastructure: bool = False  # an error verdict the hardware gave
    decided_unbuilt: bool = False  # its first verdict was given unbuilt, as not relevant

    @property
    def in_figures(self) -> bool:
        """Whether the commit counts in the figures of upstream's flow (see IN_FIGURES)."""
        return self.position is not None or self.how != "forced"

    @property
    def latency(self) -> int | None:
        """Seen to first verdict, for a decided commit in the figures that the relay judged (see HAS_LATENCY)."""
        if self.decided_at is None or not self.in_figures or self.decided_unbuilt:
            return None
        return self.decided_at - self.seen_at


# The commits the figures count (time to verdict, pass rate, decided counts): they describe the relay's promise,
# every upstream commit validated within so long. A forced build of a commit no upstream change brought (older
# than the relay's first poll) is a user's request, not upstream's flow: it is left out. A forced rebuild of an
# upstream commit still counts, its latency ending at its first verdict (`decide` keeps that).
IN_FIGURES = sa.or_(commits.c.position.is_not(None), sa.func.coalesce(commits.c.how, "") != "forced")
# The commits the relay judged (built, covered, bisected, forced), not those it decided unbuilt as not relevant:
# the latency of the promise is theirs. A build forced after such a decision leaves it out still: the latency ends
# at the first verdict, which was given unbuilt (at once), and the forced build is a user's request.
HAS_LATENCY = sa.not_(commits.c.decided_unbuilt)
# A verdict as the figures count it (tables.FIGURE_VERDICTS): the hardware's errors apart.
FIGURE_STATE = sa.case((commits.c.infrastructure, INFRASTRUCTURE), (commits.c.how == NOT_RELEVANT, NOT_RELEVANT),
                       else_=commits.c.state)


@dataclass(frozen=True)
class Origin:
    """What the relay knows of a commit beside its sha: its place in upstream order (the id of the change that
    brought it; None when none did) and its title and author (None when unknown)."""

    position: int | None = None
    title: str | None = None
    author: str | None = None


def record_arrival(conn, backend: str, sha: str, branch: str, seen_at: float, brid: int | None = None,
                   description: str | None = None, origin: Origin = Origin()) -> bool:
    """A pending row for a commit the relay sees; True when it is new. A commit seen again (rebuilt, forced) keeps
    its row as it is, first seen_at included; only what the row did not know of its origin is added (a commit
    forced before its push was polled takes its place in upstream order when its change comes)."""
    try:
        conn.execute(commits.insert().values(
            backend=backend, sha=sha, branch=branch, seen_at=int(seen_at), state="pending", description=description,
            brid=brid, position=origin.position, title=origin.title, author=origin.author,
        ))
    except sa.exc.IntegrityError:  # (backend, sha) is unique: inserting is also how two masters agree on one row
        conn.rollback()
        _complete_origin(conn, backend, sha, origin)
        return False
    conn.commit()
    return True


def _complete_origin(conn, backend: str, sha: str, origin: Origin) -> None:
    c = commits.c
    for column, value in (("position", origin.position), ("title", origin.title), ("author", origin.author)):
        if value is not None:
            conn.execute(commits.update().where(c.backend == backend, c.sha == sha, c[column].is_(None))
                         .values({column: value}))
    conn.commit()


def headline(message: str | None) -> str | None:
    """A commit message's first line: its title."""
    lines = (message or "").strip().splitlines()
    return lines[0].strip() if lines else None


def author_name(author: str | None) -> str | None:
    """'A U Thor <author@example.com>' (git's, as Buildbot's changes keep it) without the address."""
    name = (author or "").split("<", 1)[0].strip()
    return name or None


def move_to_request(conn, old_brid: int, new_brid: int) -> int:
    """The undecided commits of request `old_brid` are now covered by `new_brid` (the old one was collapsed into
    it); returns how many moved. Those whose build started once move too: a request is collapsed only while no
    unit holds it, so a build of it that started was interrupted (RETRY) and put it back in the queue. Their
    started_at stays: the first start counts."""
    moved = conn.execute(
        commits.update().where(commits.c.brid == old_brid, commits.c.decided_at.is_(None)).values(brid=new_brid)
    ).rowcount
    conn.commit()
    return moved


def mark_started(conn, brid: int, started_at: float) -> int:
    """The build of request `brid` started: so did every commit it builds or covers, unless one started before
    (an earlier build of the request, retried); returns how many rows changed."""
    started = conn.execute(
        commits.update().where(commits.c.brid == brid, commits.c.started_at.is_(None)).values(started_at=int(started_at))
    ).rowcount
    conn.commit()
    return started


def take_into_request(conn, backend: str, sha: str, brid: int) -> bool:
    """Request `brid` builds the commit itself after all (a unit claimed its request before the collapse, or a
    forced build of a commit still queued): it is no longer covered by another request; False when the commit is
    decided or has no row."""
    return _update_pending(conn, backend, sha, brid=brid)


def commits_of_request(conn, brid: int) -> list[CommitRow]:
    """The commits request `brid` builds or covers, in the order they arrived."""
    return _rows(conn, commits.select().where(commits.c.brid == brid).order_by(commits.c.id))


def not_relevant_among(conn, backend: str, shas: list[str]) -> set[str]:
    """Those of `shas` the backend decided unbuilt, as not relevant to it (config/relevance.py)."""
    c = commits.c
    return set(conn.execute(sa.select(c.sha).where(c.backend == backend, c.sha.in_(shas), c.how == NOT_RELEVANT))
               .scalars())


def find_commit(conn, backend: str, sha: str) -> CommitRow | None:
    found = _rows(conn, commits.select().where(commits.c.backend == backend, commits.c.sha == sha))
    return found[0] if found else None


def decide(conn, backend: str, sha: str, state: str, description: str, how: str, buildid: int | None,
           decided_at: float, infrastructure: bool = False) -> bool:
    """A final verdict posted for a commit; False when the relay has no row for it. The row holds the latest
    verdict posted (a rebuild, a bisection may post another) and when the first was: the latency's end, and
    whether it was given unbuilt. `infrastructure`: an error the hardware gave, not the relay."""
    check_value("state", state, VERDICTS)
    check_value("how", how, HOW_DECIDED)
    first = commits.c.decided_at.is_(None)  # the row as it was: an UPDATE's values read the old columns
    decided = conn.execute(
        commits.update()
        .where(commits.c.backend == backend, commits.c.sha == sha)
        .values(state=state, description=description, how=how, buildid=buildid,
                infrastructure=infrastructure and state == "error",
                decided_unbuilt=sa.case((first, sa.literal(how == NOT_RELEVANT)), else_=commits.c.decided_unbuilt),
                decided_at=sa.func.coalesce(commits.c.decided_at, int(decided_at)))
    ).rowcount
    conn.commit()
    return decided == 1


def set_pending_description(conn, backend: str, sha: str, description: str) -> bool:
    """A new text for a commit still pending ('Bisecting ...'); a decided commit keeps its verdict's: False then."""
    return _update_pending(conn, backend, sha, description=description)


def _update_pending(conn, backend: str, sha: str, **values) -> bool:
    """Changes the commit's row while it has no verdict; False when it has one, or no row."""
    changed = conn.execute(
        commits.update()
        .where(commits.c.backend == backend, commits.c.sha == sha, commits.c.decided_at.is_(None))
        .values(**values)
    ).rowcount
    conn.commit()
    return changed == 1


def decided_since(conn, since: float, backend: str | None = None) -> list[CommitRow]:
    """The commits of `backend` (of every backend without one) decided at or after `since` that count in the
    figures (IN_FIGURES), earliest first: their seen_at, started_at and decided_at are the latency's figures."""
    query = commits.select().where(commits.c.decided_at >= int(since), IN_FIGURES)
    if backend is not None:
        query = query.where(commits.c.backend == backend)
    return _rows(conn, query.order_by(commits.c.decided_at, commits.c.id))


def pending_commits(conn, backend: str | None = None) -> list[CommitRow]:
    """The commits of `backend` (of every backend without one) still without a final verdict, earliest seen first."""
    query = commits.select().where(commits.c.decided_at.is_(None))
    if backend is not None:
        query = query.where(commits.c.backend == backend)
    return _rows(conn, query.order_by(commits.c.seen_at, commits.c.id))


def newest_request(conn) -> int | None:
    """The newest build request a commit was recorded with: where the ledger's arrivals stood before it kept a
    watermark of its own."""
    return conn.execute(sa.select(sa.func.max(commits.c.brid))).scalar()


def _rows(conn, query) -> list[CommitRow]:
    return [CommitRow(**row._mapping) for row in conn.execute(query)]
