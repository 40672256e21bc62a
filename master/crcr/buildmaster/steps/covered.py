"""The build's first step, on the master: the queued commits its build covers (`queue: newest`), each linked to
its web page, so the build page says which commits its verdict stands for. It also tells the ledger that the build
started (the latency's middle figure)."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import SUCCESS
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.buildmaster.util.relay_services import commit_ledger
from crcr.names import BACKEND_PROPERTY, BISECTION_PROPERTY, PULL_REQUEST_PROPERTY


def _an_upstream_commits_build(step) -> bool:
    """A bisection build covers nothing and is no commit's verdict; a PR build's verdict is the PR's, even when its
    head is an upstream commit too (a PR merged by fast-forward)."""
    return step.getProperty(BISECTION_PROPERTY) is None and step.getProperty(PULL_REQUEST_PROPERTY) is None


class CoveredCommits(BuildStep):
    def __init__(self, commit_url, **kwargs):
        """`commit_url`: Buildbot's revlink, a commit's web page (None where the upstream has none)."""
        self.commit_url = commit_url
        self.covered = 0
        # Shown only when the build covers commits: most builds build their own commit alone.
        super().__init__(doStepIf=_an_upstream_commits_build, hideStepIf=lambda results, step: not step.covered,
                         **kwargs)

    @defer.inlineCallbacks
    def run(self):
        ledger = commit_ledger(self.master)
        sha = self.build.getSourceStamp("").revision
        covered = yield ledger.build_started(self.build.requests[0].id, self.getProperty(BACKEND_PROPERTY), sha,
                                             self.getProperty("workername"))
        if not covered:
            self.descriptionDone = ["builds its own commit only"]
            return SUCCESS
        self.covered = len(covered)
        titles = yield self._titles([row.sha for row in covered])
        for row in covered:
            page = self.commit_url(row.sha, "")
            if page:  # else the log below names it
                yield self.addURL(f"{row.sha[:10]} {titles.get(row.sha, '')}".strip(), page)
        yield self.addCompleteLog("covered commits", (
            f"This build of {sha} also stands for these earlier commits, queued while every unit was busy:\n"
            + "".join(f"  {row.sha}  {titles.get(row.sha, '')}\n" for row in covered)
        ))
        self.descriptionDone = [f"covers {len(covered)} earlier commit{'s' if len(covered) > 1 else ''}"]
        return SUCCESS

    @defer.inlineCallbacks
    def _titles(self, shas: list[str]):
        """Each commit's subject line, from the master's upstream mirror; none when it cannot tell."""

        @defer.inlineCallbacks
        def subjects(repository: str):
            code, out, err = yield revisions.run_git(["log", "--no-walk=unsorted", "--format=%H %s", *shas, "--"],
                                                     repository)
            if code != 0:
                raise revisions.NotFetched(err)
            return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)

        try:
            return (yield upstream_mirror(self.master).answer(subjects))
        except revisions.RevisionError as e:
            log.msg(f"crcr covered commits: no subjects: {e}")
            return {}
