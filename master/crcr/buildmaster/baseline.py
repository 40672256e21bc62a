"""The baseline a suite's failures are compared with: the same suite in a build of the nearest earlier
commit of upstream's history.

Build numbers do not follow history: a forced build of an old commit is the newest build, and a
rebuild of a commit is newer than that commit's first build. So the history comes from git (the
upstream poller's bare repository on the master holds every commit of the followed branches) and
the builds at those commits from one database query, without a round trip to a worker.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import sqlalchemy as sa
from buildbot.util import runprocess
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.revisions import SHA
from crcr.names import POLLER_WORKDIR, TESTS_PROPERTY
from crcr.suites.results import SuiteResults

# How far back the history is searched: a bound on one query's size (within SQLite's oldest limit of
# 999 parameters). Bisection builds many commits of a builder, so the search stays one query however
# many builds the builder has.
COMMITS_SEARCHED = 500
REVISION_PROPERTY = "got_revision"  # the commit a build checked out, set by its Git step


@dataclass(frozen=True)
class Baseline:
    sha: str
    build_number: int
    results: SuiteResults


@defer.inlineCallbacks
def find_baseline(master, builderid: int, sha: str | None, suite: str):
    """The Baseline of `suite` in a build at `sha`: the nearest earlier commit in `sha`'s first-parent
    history with a complete build of this builder holding `suite`'s results (not timed out); None without one."""
    history = (yield earlier_commits(master, sha)) if sha and SHA.match(sha) else []
    if not history:
        return None
    builds = yield master.db.pool.do(_builds_at, master.db.model, builderid, history)
    position = {commit: index for index, commit in enumerate(history)}
    # Nearest commit first; of several builds of one commit, the latest.
    for buildid, number, commit in sorted(builds, key=lambda b: (position[b[2]], -b[1])):
        properties = yield master.data.get(("builds", buildid, "properties"))
        results = (properties.get(TESTS_PROPERTY, ({},))[0] or {}).get(suite)
        if results and not results["timed_out"]:
            return Baseline(commit, number, SuiteResults.from_property(results))
    return None


@defer.inlineCallbacks
def earlier_commits(master, sha: str):
    """The commits before `sha` along first parents (the branch's own line, not merged side branches), nearest first."""
    command = ["git", "rev-list", "--first-parent", "--skip=1", f"--max-count={COMMITS_SEARCHED}", sha, "--"]
    code, out, err = yield runprocess.run_process(master.reactor, command, workdir=os.path.join(master.basedir, POLLER_WORKDIR))
    if code != 0:
        # A commit the poller has not fetched (yet): no history, so no baseline; say why in the master's log.
        log.msg(f"crcr baseline: no history for {sha}: {' '.join(command)} exited {code}: {err.decode().strip()}")
        return []
    return out.decode().split()


def _builds_at(conn, model, builderid: int, commits: list[str]) -> list[tuple[int, int, str]]:
    """(buildid, number, commit) of the builder's complete builds at any of `commits`."""
    builds, revision = model.builds, model.build_properties
    query = (
        sa.select(builds.c.id, builds.c.number, revision.c.value)
        .select_from(builds.join(revision, revision.c.buildid == builds.c.id))
        .where(
            builds.c.builderid == builderid,
            builds.c.complete_at.isnot(None),
            revision.c.name == REVISION_PROPERTY,
            revision.c.value.in_([json.dumps(commit) for commit in commits]),  # property values are stored as JSON
        )
    )
    return [(row.id, row.number, json.loads(row.value)) for row in conn.execute(query)]
