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
        if pull_request is None:
            self.baseline = yield find_baseline(self.master, builderid, built, self.suite_name)
        else:
            self.merge_base = yield self._find_merge_base(pull_request, built)
            self.baseline = None if self.merge_base is None else (
                yield find_baseline(self.master, builderid, self.merge_base, self.suite_name, including=True))
        compare(results, self.baseline.results if self.baseline else None)
        baselines = dict(self.getProperty(BASELINES_PROPERTY) or {})
        baselines[self.suite_name] = self.baseline.sha if self.baseline else None
        self.setProperty(BASELINES_PROPERTY, baselines, "crcr")

    @defer.inlineCallbacks
    def _find_merge_base(self, pull_request: dict, built: str):
        """The merge base of the PR's head that this build checked out with its base branch, recorded for the status
        text; None when it cannot be found, and why in the step's log."""
        if self.getProperty(MERGE_BASE_PROPERTY):  # an earlier suite of this build found it: same head, same base
            return self.getProperty(MERGE_BASE_PROPERTY)
        try:
            merge_base = yield upstream_mirror(self.master).pull_request_merge_base(
                pull_request["number"], built or "", pull_request["base_sha"])
        except revisions.RevisionError as e:
            merge_base, self.no_merge_base = None, str(e)
        self.setProperty(MERGE_BASE_PROPERTY, merge_base, "crcr")
        return merge_base

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
