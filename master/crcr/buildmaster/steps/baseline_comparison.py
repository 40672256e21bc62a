"""What a suite's tests are compared with, the comparison half of its verdict (suite_verdict.py): the baseline
(baseline.py) of the nearest earlier commit, or in a pull request's build of its merge base with its base branch,
recorded in the build's properties and said at the head of the failing tests' log."""

from __future__ import annotations

from twisted.internet import defer

from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.buildmaster.steps.baseline import Baseline, find_baseline
from crcr.names import BASELINES_PROPERTY, MERGE_BASE_PROPERTY, PULL_REQUEST_PROPERTY
from crcr.suites.results import PullRequestBase, SuiteResults, compare


class BaselineComparison:
    """A mixin of a suite's step (through SuiteVerdict): `_compare` marks a run's tests new, still failing or fixed
    against the baseline it finds."""

    def __init__(self, **kwargs):
        self.baseline: Baseline | None = None  # what the failures were compared with
        self.merge_base: str | None = None  # a pull request build's, once found
        self.no_merge_base = ""  # why a pull request build's merge base was not found
        super().__init__(**kwargs)

    @defer.inlineCallbacks
    def _compare(self, results: SuiteResults):
        builderid = yield self.build.getBuilderId()  # known to the build: no database read
        pull_request, built = self.getProperty(PULL_REQUEST_PROPERTY), self.getProperty("got_revision")
        if pull_request is not None and self.getProperty(MERGE_BASE_PROPERTY) is None:
            # found once per build: same head, same base for every suite
            self.merge_base, self.no_merge_base = yield merge_base_of(self.master, pull_request, built)
            self.setProperty(MERGE_BASE_PROPERTY, self.merge_base, "crcr")
        elif pull_request is not None:
            self.merge_base = self.getProperty(MERGE_BASE_PROPERTY)
        self.baseline = yield baseline_of(self.master, builderid, built, self.suite_name, pull_request,
                                          self.merge_base)
        compare(results, self.baseline.results if self.baseline else None)
        baselines = dict(self.getProperty(BASELINES_PROPERTY) or {})
        baselines[self.suite_name] = self.baseline.sha if self.baseline else None
        self.setProperty(BASELINES_PROPERTY, baselines, "crcr")

    def _pull_request_base(self) -> PullRequestBase | None:
        pull_request = self.getProperty(PULL_REQUEST_PROPERTY)
        if pull_request is None:
            return None
        baselines = (self.baseline.sha,) if self.baseline else ()
        return PullRequestBase(pull_request["base_branch"], self.merge_base, baselines)

    def _compared_with(self) -> str:
        pull_request = self.getProperty(PULL_REQUEST_PROPERTY)
        if pull_request is None:
            if self.baseline is None:
                return "compared with: nothing (no earlier commit has a complete build with this suite's results)\n"
            return f"compared with: build {self.baseline.build_number} of commit {self.baseline.sha}\n"
        number, branch = pull_request["number"], pull_request["base_branch"]
        if self.merge_base is None:
            return f"compared with: nothing ({self.no_merge_base})\n"
        if self.baseline is None:
            return (f"compared with: nothing (no {branch} build at or before the merge base {self.merge_base} "
                    f"of pull request #{number} has this suite's results)\n")
        return (f"compared with: build {self.baseline.build_number} of {branch}@{self.baseline.sha} "
                f"(merge base of pull request #{number}: {self.merge_base})\n")


def baseline_of(master, builderid: int, built: str | None, suite: str, pull_request: dict | None,
                merge_base: str | None) -> defer.Deferred:
    """What a run of `suite` at `built` compares with: the nearest earlier commit's Baseline, or a pull request's
    at its merge base (None without one)."""
    if pull_request is None:
        return find_baseline(master, builderid, built, suite)
    if merge_base is None:
        return defer.succeed(None)
    return find_baseline(master, builderid, merge_base, suite, including=True)


@defer.inlineCallbacks
def merge_base_of(master, pull_request: dict, built: str | None):
    """(the merge base of the PR's head this build checked out with its base branch, '') or (None, why not)."""
    try:
        merge_base = yield upstream_mirror(master).pull_request_merge_base(
            pull_request["number"], built or "", pull_request["base_sha"])
    except revisions.RevisionError as e:
        return None, str(e)
    return merge_base, ""
