"""The relay's queries on Buildbot's own tables, all in one place: what Buildbot's data API cannot ask (builds by
the commit they checked out, build requests by sourcestamp, the changes after one, the change that brought a
commit, the cluster's connections) or asks too slowly; and the one index the relay adds to Buildbot's schema,
over the commit each build checked out. The store makes that index at each start (IF NOT EXISTS) rather than in one of its migrations: Buildbot's own
migrations may rebuild a table on SQLite (alembic's batch mode copies it), dropping the indexes they do not know.

The cluster's connections: Buildbot writes a row in connected_workers as a worker connects and deletes it as it
goes, but never deletes a dead master's rows (its housekeeping deconfigures the dead master's workers, not its
connections): only the rows of masters counted active say anything. A master's own connections are in its
memory, which is right even when rows of its previous run (a crash) remain; so these ask about the other masters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa

from crcr.names import (
    BUILD_MADE_PROPERTY,
    COMPILER_CACHE_PROPERTY,
    PULL_REQUEST_REF_PREFIX,
    RELAY_CHANGE_CATEGORIES,
    pull_request_of_ref,
)
from crcr.store.commits import Origin, author_name, headline

REVISION_INDEX = "crcr_build_revisions"
REVISION_PROPERTY = "got_revision"  # the commit a build checked out, set by its Git step


def builds_at(conn, model, builderid: int, commits: list[str]) -> list[tuple[int, int, str]]:
    """(buildid, number, commit) of the builder's complete builds at any of `commits`."""
    rows = conn.execute(builds_at_query(model, builderid, commits))
    return [(row.id, row.number, json.loads(row.value)) for row in rows]


def builds_at_query(model, builderid: int, commits: list[str]):
    """The builds at `commits` through the revision index, then those of this builder. The property's name is
    written out, not a parameter, so that the databases see it match the index's condition; and `+ 0` keeps
    SQLite from going through the builder's builds instead (its index on builderid, number)."""
    builds, revision = model.builds, model.build_properties
    return (
        sa.select(builds.c.id, builds.c.number, revision.c.value)
        .select_from(revision.join(builds, revision.c.buildid == builds.c.id))
        .where(
            revision.c.name == sa.literal_column(f"'{REVISION_PROPERTY}'"),
            revision.c.value.in_([json.dumps(commit) for commit in commits]),  # property values are JSON
            builds.c.builderid + 0 == builderid,
            builds.c.complete_at.isnot(None),
        )
    )


def create_revision_index(conn) -> None:
    """The index of each build's checked-out commit (a partial index, of SQLite and PostgreSQL: the other
    properties' values can be too long for one); nothing when it is there already."""
    conn.execute(sa.text(
        f"CREATE INDEX IF NOT EXISTS {REVISION_INDEX} ON build_properties (value) WHERE name = '{REVISION_PROPERTY}'"
    ))
    conn.commit()


def finished_since(conn, model, since: int) -> list[int]:
    """The ids of Buildbot's builds that ended at or after `since`, oldest first."""
    builds = model.builds
    query = sa.select(builds.c.id).where(builds.c.complete_at >= since).order_by(builds.c.complete_at, builds.c.id)
    return list(conn.execute(query).scalars())


def requests_of_ref(conn, model, builderid: int, ref: str) -> list[tuple[int, str, bool, int]]:
    """(brid, revision, complete, results) of each of the builder's build requests for `ref` (a pull request's),
    oldest first: the data API cannot filter build requests by sourcestamp."""
    requests, sets, stamps = model.buildrequests, model.buildset_sourcestamps, model.sourcestamps
    query = (
        sa.select(requests.c.id, stamps.c.revision, requests.c.complete, requests.c.results)
        .select_from(requests.join(sets, sets.c.buildsetid == requests.c.buildsetid)
                     .join(stamps, stamps.c.id == sets.c.sourcestampid))
        .where(requests.c.builderid == builderid, stamps.c.branch == ref)
        .order_by(requests.c.id)
    )
    return [(row.id, row.revision, bool(row.complete), row.results) for row in conn.execute(query)]


def pull_requests_built_at(conn, model, revision: str) -> list[int]:
    """The numbers of the pull requests whose head `revision` was asked to be built (a sourcestamp of their ref at
    it), the latest asked first: what the relay knows of which PR a commit is the head of."""
    stamps, sets = model.sourcestamps, model.buildset_sourcestamps
    query = (
        sa.select(stamps.c.branch, sa.func.max(sets.c.buildsetid).label("latest"))
        .select_from(stamps.join(sets, sets.c.sourcestampid == stamps.c.id))
        .where(stamps.c.revision == revision, stamps.c.branch.like(f"{PULL_REQUEST_REF_PREFIX}%"))
        .group_by(stamps.c.branch)
        .order_by(sa.desc("latest"))
    )
    numbers = (pull_request_of_ref(row.branch) for row in conn.execute(query))
    return [number for number in numbers if number is not None]


def origin_of(conn, model, revision: str) -> Origin:
    """The commit's place in upstream order, from the earliest upstream change that brought it (Buildbot indexes
    changes by revision), and its title and author from the earliest change of it, one the relay adds for a forced
    commit or a pull request's head too (which gives no place: it is added when built, not when pushed); an empty
    Origin when no change has it."""
    changes = model.changes
    query = (sa.select(changes.c.changeid, changes.c.comments, changes.c.author, changes.c.category)
             .where(changes.c.revision == revision).order_by(changes.c.changeid))
    rows = conn.execute(query).fetchall()
    if not rows:
        return Origin()
    upstream = [row.changeid for row in rows if row.category not in RELAY_CHANGE_CATEGORIES]
    return Origin(upstream[0] if upstream else None, headline(rows[0].comments), author_name(rows[0].author))


def changes_after(conn, model, changeid: int) -> list[int]:
    """The ids of the changes recorded after change `changeid`, oldest first."""
    changes = model.changes
    query = sa.select(changes.c.changeid).where(changes.c.changeid > changeid).order_by(changes.c.changeid)
    return [row.changeid for row in conn.execute(query)]


@dataclass(frozen=True)
class StageBuildRow:
    """A successful build of a shared build or a build stage (health/stage_builds.py), with what it said of how it
    made its artifacts: the values of its two properties (names.py), None where it has none."""

    builder: str  # Buildbot's builder it is recorded under (a build stage's: its virtual builder)
    started_at: int
    complete_at: int
    made: object  # BUILD_MADE_PROPERTY's value
    cache: object  # COMPILER_CACHE_PROPERTY's value


# The results of a build that made its artifacts: Buildbot's SUCCESS and WARNINGS (its codes, as the history keeps
# them; the store does without Buildbot's modules).
MADE = (0, 1)


def successful_builds_of(conn, model, builders: list[str], since: int) -> list[StageBuildRow]:
    """The successful builds (MADE) of the builders named `builders` completed at or after `since`, oldest first."""
    return _stage_builds(conn, model, builders, lambda builds: builds.c.complete_at >= since)


def successful_builds_at(conn, model, builders: list[str], sha: str) -> list[StageBuildRow]:
    """The successful builds (MADE) of the builders named `builders` at commit `sha`, oldest first."""
    revision = model.build_properties.alias("revision")
    return _stage_builds(conn, model, builders, lambda builds: sa.exists().where(
        revision.c.buildid == builds.c.id, revision.c.name == "got_revision", revision.c.value == json.dumps(sha)))


def _stage_builds(conn, model, builders: list[str], which) -> list[StageBuildRow]:
    if not builders:
        return []
    builds, names, properties = model.builds, model.builders, model.build_properties
    made, cache = properties.alias("made"), properties.alias("cache")
    query = (
        sa.select(names.c.name, builds.c.started_at, builds.c.complete_at, made.c.value, cache.c.value)
        .select_from(builds.join(names, names.c.id == builds.c.builderid)
                     .outerjoin(made, sa.and_(made.c.buildid == builds.c.id, made.c.name == BUILD_MADE_PROPERTY))
                     .outerjoin(cache, sa.and_(cache.c.buildid == builds.c.id,
                                               cache.c.name == COMPILER_CACHE_PROPERTY)))
        .where(names.c.name.in_(builders), builds.c.complete_at.is_not(None), which(builds),
               builds.c.results.in_(MADE))
        .order_by(builds.c.complete_at, builds.c.id)
    )
    return [StageBuildRow(name, started, complete, _json_or_none(made_value), _json_or_none(cache_value))
            for name, started, complete, made_value, cache_value in conn.execute(query)]


def _json_or_none(value: str | None) -> object:
    """A property's value (Buildbot keeps it as JSON); None for none, or for a value that is not JSON."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


@dataclass(frozen=True)
class MasterRow:
    """A master of Buildbot's masters table: `active` until it stops or is counted dead; `last_active` its newest sign
    of life (epoch seconds)."""

    masterid: int
    name: str
    active: bool
    last_active: int


def masters_since(conn, model, since: int) -> list[MasterRow]:
    """The active masters, and those stopped whose last sign of life is at or after `since` (Buildbot never deletes a
    master's row: every name a master ever ran under stays)."""
    masters = model.masters
    query = (sa.select(masters.c.id, masters.c.name, masters.c.active, masters.c.last_active)
             .where(sa.or_(masters.c.active != 0, masters.c.last_active >= since)).order_by(masters.c.name))
    return [MasterRow(row.id, row.name, bool(row.active), row.last_active) for row in conn.execute(query)]


def _other_active_masters(model, masterid: int):
    masters = model.masters
    return sa.select(masters.c.id).where(masters.c.active != 0, masters.c.id != masterid)


def connected_elsewhere(conn, model, masterid: int) -> set[str]:
    """The names of the workers connected to a live master other than `masterid`."""
    connected, workers = model.connected_workers, model.workers
    query = (sa.select(workers.c.name).distinct()
             .select_from(connected.join(workers, connected.c.workerid == workers.c.id))
             .where(connected.c.masterid.in_(_other_active_masters(model, masterid))))
    return {row.name for row in conn.execute(query)}
