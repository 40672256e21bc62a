"""Per-backend force schedulers: a revision's build, and a bisection (upstream_scheduler.py reacts to commits)."""

from __future__ import annotations

from buildbot.plugins import util
from buildbot.process.results import FAILURE
from buildbot.schedulers.forcesched import ValidationErrorCollector
from twisted.internet import defer

from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes.forced_changes import ChangesForStamps
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.buildmaster.schedulers.files_read import FilesRead
from crcr.buildmaster.schedulers.force_forms import OwnBuildersForceScheduler, PriorityParameter
from crcr.buildmaster.util.relay_services import commit_ledger
from crcr.config.backend import Backend
from crcr.config.errors import shown
from crcr.config.limits import MAX_BISECTED_TESTS, MAX_NODE_ID
from crcr.config.settings import Settings
from crcr.names import (
    BISECTION_PROPERTY,
    REQUESTED_REVISION_PROPERTY,
    SUITE_SEPARATOR,
    SUITE_STEP_PREFIX,
    TESTS_PROPERTY,
    bisect_scheduler_name,
    force_scheduler_name,
    key_of,
)
from crcr.store.buildbot_tables import builds_at
from crcr.suites.results import SuiteResults


class UpstreamRevisionForceScheduler(FilesRead, ChangesForStamps, OwnBuildersForceScheduler):
    """A force scheduler that pins the typed revision to an exact upstream commit before building it."""

    files_read = ("settings", "followed_branches")

    def __init__(self, name: str, builder: str, settings: Settings, branches: list[str]):
        self.settings = settings
        self.followed_branches = branches
        super().__init__(
            name=name,
            builderNames=[builder],
            buttonName="Build an upstream revision",
            label=f"Build an upstream revision on {builder}",
            username=_signed_in_owner(),
            reason="forced by a user",
            codebases=[
                util.CodebaseParameter(
                    "",
                    label="Upstream revision",
                    branch=util.FixedParameter(name="branch", default=""),
                    revision=util.StringParameter(
                        name="revision",
                        label="Revision (sha, abbreviated sha or branch)",
                        required=True,
                        size=45,
                    ),
                    repository=util.FixedParameter(name="repository", default=settings.upstream_url),
                    project=util.FixedParameter(name="project", default=settings.github_repo),
                )
            ],
            properties=[],
        )

    @defer.inlineCallbacks
    def gatherPropertiesAndChanges(self, collector, **kwargs):
        properties, changeids, sourcestamps = yield super().gatherPropertiesAndChanges(collector, **kwargs)
        stamp = sourcestamps.get("")
        if stamp and stamp.get("revision"):
            typed = stamp["revision"]
            try:
                resolved = yield upstream_mirror(self.master).resolve(typed, self.followed_branches)
            except revisions.RevisionError as e:
                collector.errors["revision"] = str(e)
            else:
                stamp.update(revision=resolved.sha, branch=resolved.branch)
                properties.setProperty(REQUESTED_REVISION_PROPERTY, typed, "Force Build Form")
        return properties, changeids, sourcestamps


def _signed_in_owner() -> util.FixedParameter:
    """No 'Your name' field: Buildbot's REST API passes the signed-in user to force() as the owner, and falls back
    to the form's name only for an anonymous request, which the relay's Authz refuses."""
    return util.FixedParameter(name="username", default="")


def force_scheduler(backend: Backend, settings: Settings) -> UpstreamRevisionForceScheduler:
    return UpstreamRevisionForceScheduler(
        name=force_scheduler_name(backend.name),
        builder=backend.name,
        settings=settings,
        branches=_force_branches(backend, settings),
    )


def _force_branches(backend: Backend, settings: Settings) -> list[str]:
    return [b for b in settings.upstream_branches if b in backend.branches] or backend.branches



def _hidden_upstream_codebase(settings: Settings) -> util.CodebaseParameter:
    """A force form's codebase with nothing to type: the revisions are the form's own fields."""
    return util.CodebaseParameter(
        "",
        branch=util.FixedParameter(name="branch", default=""),
        revision=util.FixedParameter(name="revision", default=""),
        repository=util.FixedParameter(name="repository", default=settings.upstream_url),
        project=util.FixedParameter(name="project", default=settings.github_repo),
    )


class BisectScheduler(FilesRead, ChangesForStamps, OwnBuildersForceScheduler):
    """`bisect-<backend>`: the builder page's 'Bisect' form and `crcr bisect` start a bisection through its
    force(); the bisector asks it for each step's build, so that Buildbot records it as the steps' scheduler."""

    files_read = ("settings", "followed_branches", "suites")

    def __init__(self, backend: Backend, settings: Settings, branches: list[str]):
        self.settings, self.followed_branches = settings, branches
        self.suites = [suite.name for suite in backend.suites]
        super().__init__(
            name=bisect_scheduler_name(backend.name),
            builderNames=[backend.name],
            buttonName="Bisect",
            label=f"Bisect upstream commits on {backend.name}",
            username=_signed_in_owner(),
            reason="bisected by a user",
            # Not asked (Buildbot wants the field): the bisector gives its steps' builds their priority.
            priority=PriorityParameter(hide=True),
            codebases=[_hidden_upstream_codebase(settings)],
            properties=[
                util.StringParameter(name="good", label="Good revision (the tests pass there)", required=True, size=45),
                util.StringParameter(name="bad", label="Bad revision (they fail there)", required=True, size=45),
                util.TextParameter(
                    name="tests", cols=70, rows=3,
                    label="Tests, one per line: SUITE::NODE_ID, or SUITE for a whole suite (empty: those failing "
                          "at the bad revision and not at the good one)",
                ),
            ],
        )

    @defer.inlineCallbacks
    def force(self, owner, builderNames=None, builderid=None, **kwargs):
        """Starts a bisection; returns {bisection, commits, tests, url}. Refused input raises Buildbot's
        CollectedValidationError, which the UI shows beside each field and the REST API returns."""
        (builder,) = yield self.own_builders(builderNames, builderid)
        listed = {name: value if isinstance(value, list) else [value] for name, value in kwargs.items()}  # as force()
        given = {name: value[0] if value else None for name, value in listed.items()}
        collector = ValidationErrorCollector()
        # Refused as every form's reason is, though a bisection keeps who asked for it, not why.
        yield collector.collectValidationErrors("reason", self.reason.getFromKwargs, listed)
        mirror = upstream_mirror(self.master)
        good = yield collector.collectValidationErrors(
            "good", mirror.resolve, str(given.get("good") or ""), self.followed_branches)
        bad = yield collector.collectValidationErrors(
            "bad", mirror.resolve, str(given.get("bad") or ""), self.followed_branches)
        collector.maybeRaiseCollectedErrors()
        commits = yield collector.collectValidationErrors("bad", mirror.first_parent_range, good.sha, bad.sha)
        collector.maybeRaiseCollectedErrors()
        tests = yield collector.collectValidationErrors(
            "tests", self._tests, str(given.get("tests") or ""), good.sha, bad.sha)
        collector.maybeRaiseCollectedErrors()
        ledger = commit_ledger(self.master)
        bisectionid = yield ledger.bisector.start_by_hand(builder, bad.branch, good.sha, bad.sha, commits, tests, owner)
        return {"bisection": bisectionid, "commits": len(commits), "tests": tests,
                "url": ledger.bisector.page_url(bisectionid)}

    @defer.inlineCallbacks
    def _tests(self, text: str, good: str, bad: str):
        names = list(dict.fromkeys(text.split()))
        if len(names) > MAX_BISECTED_TESTS:
            raise ValueError(f"at most {MAX_BISECTED_TESTS} tests in one bisection (these are {len(names)})")
        named = [self._key(name) for name in names]
        failing_bad = yield self._failing_at(bad)
        if named:
            # A test passing at BAD has no first bad commit in the range: the bisection would blame BAD itself.
            passing = [key for key in named if failing_bad is not None and not _fails(key, failing_bad)]
            if passing:
                raise ValueError(f"{', '.join(passing)} did not fail in the latest build of {bad[:10]}; "
                                 "bisect tests that fail there")
            return named
        if failing_bad is None:
            raise ValueError(f"no finished build of {bad[:10]} to read its failing tests from; name the tests")
        tests = sorted(failing_bad - ((yield self._failing_at(good)) or set()))
        if not tests:
            raise ValueError(f"no test fails at {bad[:10]} that passes at {good[:10]}; name the tests to bisect")
        return tests

    def _key(self, name: str) -> str:
        if len(name) > MAX_NODE_ID:
            raise ValueError(f"{shown(name)}: a test's name has at most {MAX_NODE_ID} characters")
        if name.partition(SUITE_SEPARATOR)[0] in self.suites:
            return name
        if len(self.suites) == 1:
            return key_of(self.suites[0], name)
        raise ValueError(f"'{name}': name its suite, as SUITE::NODE_ID (suites: {', '.join(self.suites)})")

    @defer.inlineCallbacks
    def _failing_at(self, sha: str):
        """The tests failing in the latest finished build of `sha` (a failed suite without test results, or one
        that did not run whole, as a whole); None without such a build."""
        builderid = yield self.master.data.updates.findBuilderId(self.builderNames[0])
        builds = yield self.master.db.pool.do(builds_at, self.master.db.model, builderid, [sha])
        for buildid, _, _ in sorted(builds, key=lambda b: -b[1]):
            properties = yield self.master.data.get(("builds", buildid, "properties"))
            if BISECTION_PROPERTY in properties:
                continue
            steps = yield self.master.data.get(("builds", buildid, "steps"))
            failed_suites = [step["name"].removeprefix(SUITE_STEP_PREFIX) for step in steps
                             if step["name"].startswith(SUITE_STEP_PREFIX) and step["results"] == FAILURE]
            return failing_in_build(properties.get(TESTS_PROPERTY, ({},))[0] or {}, failed_suites)
        return None


def failing_in_build(tested: dict, failed_suites: list[str]) -> set[str]:
    """The test keys failing in a build, from its TESTS_PROPERTY ({suite: SuiteResults as a property}) and its
    failed suite steps: a failed suite without test results, or one that did not run whole (a file that could not
    be collected, a timeout), fails as a whole."""
    failing = {key_of(suite, node_id) for suite, value in tested.items() for node_id in value["failing"]}
    failing |= {suite for suite, value in tested.items() if not SuiteResults.from_property(value).ran}
    return failing | {suite for suite in failed_suites if suite not in tested}


def _fails(key: str, failing: set[str]) -> bool:
    """Whether a test key (or a whole suite) is among the failing ones."""
    return key in failing or any(test.startswith(key + SUITE_SEPARATOR) for test in failing)


def bisect_scheduler(backend: Backend, settings: Settings) -> BisectScheduler:
    return BisectScheduler(backend, settings, _force_branches(backend, settings))
