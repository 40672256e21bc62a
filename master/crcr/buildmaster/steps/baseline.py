"""The baseline a suite's failures are compared with: the same suite in a build of the nearest earlier
commit of upstream's history; for a pull request's build, of its merge base with its base branch or the
nearest earlier commit of that branch.

Build numbers do not follow history: a forced build of an old commit is the newest build, and a
rebuild of a commit is newer than that commit's first build. So the history comes from git (the
master's upstream mirror holds every commit of the followed branches, fetched when it lacks one) and
the builds at those commits from the database, nearest commits first, without a round trip to a worker.

Buildbot's schema cannot find builds by commit but by reading each build of a builder in turn: a cost
that grows with every build (0.8 s per suite at 20,000 builds of a builder, holding up every other
database write of a SQLite master meanwhile). So crcr adds one index to Buildbot's build_properties
table, over the commit each build checked out, made as the store starts (store/buildbot_tables.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot.util import runprocess
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes.revisions import SHA, NotFetched, RevisionError
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.names import BISECTION_PROPERTY, PULL_REQUEST_PROPERTY, TESTS_PROPERTY
from crcr.store.buildbot_tables import builds_at
from crcr.suites.results import SuiteResults

# How far back the history is searched. Through the revision index a search costs what the commits
# searched have been built, however many builds the builder has (bisection builds many).
COMMITS_SEARCHED = 500
# Commits asked about per query, nearest first (within SQLite's oldest limit of 999 parameters): the nearest
# usually has a build, and each commit finds the builds of every backend, so later ones are asked only when needed.
COMMITS_PER_QUERY = 50


@dataclass(frozen=True)
class Baseline:
    sha: str
    build_number: int
    results: SuiteResults


@defer.inlineCallbacks
def find_baseline(master, builderid: int, sha: str | None, suite: str, including: bool = False):
    """The Baseline of `suite` in a build at `sha`: the nearest earlier commit in `sha`'s first-parent
    history with a complete build of this builder holding `suite`'s results (of a suite that ran whole: not
    timed out, not stopped by a collection or usage error; not a bisection build, not a pull request's); None
    without one. `including`: `sha` itself counts (a PR's merge base)."""
    history = (yield earlier_commits(master, sha, including)) if sha and SHA.match(sha) else []
    position = {commit: index for index, commit in enumerate(history)}
    for start in range(0, len(history), COMMITS_PER_QUERY):
        commits = history[start : start + COMMITS_PER_QUERY]
        builds = yield master.db.pool.do(builds_at, master.db.model, builderid, commits)
        # Nearest commit first; of several builds of one commit, the latest.
        for buildid, number, commit in sorted(builds, key=lambda b: (position[b[2]], -b[1])):
            properties = yield master.data.get(("builds", buildid, "properties"))
            if BISECTION_PROPERTY in properties:
                continue  # its results hold only the few tests its bisection asked about
            if PULL_REQUEST_PROPERTY in properties:
                continue  # it tested a PR's head, whatever commit that is
            results = (properties.get(TESTS_PROPERTY, ({},))[0] or {}).get(suite)
            found = SuiteResults.from_property(results) if results else None
            if found and found.ran:  # not timed out, not stopped by a collection or usage error
                return Baseline(commit, number, found)
    return None


@defer.inlineCallbacks
def earlier_commits(master, sha: str, including: bool = False):
    """The commits before `sha` (from `sha` on, `including` it) along first parents (the branch's own line, not
    merged side branches), nearest first."""
    skip = 0 if including else 1
    command = ["git", "rev-list", "--first-parent", f"--skip={skip}", f"--max-count={COMMITS_SEARCHED}", sha, "--"]

    @defer.inlineCallbacks
    def history(repository: str):
        code, out, err = yield runprocess.run_process(master.reactor, command, workdir=repository)
        if code != 0:
            raise NotFetched(f"{' '.join(command)} exited {code}: {err.decode().strip()}")
        return out.decode().split()

    try:
        return (yield upstream_mirror(master).answer(history))
    except RevisionError as e:
        # A commit upstream does not have (any more), or upstream out of reach: no baseline; say why in the log.
        log.msg(f"crcr baseline: no history for {sha}: {e}")
        return []
