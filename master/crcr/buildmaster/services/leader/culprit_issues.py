"""The issue per break, on the leader: what a culprit's break opens or adds to its issue, and what a passing build
closes (the texts: github/culprit_issue_text.py; the delivery: github/issue_sender.py, through the outbox).

- A bisection that names a first bad commit (bisector.py), or a build right after its baseline with new failures
  (its own commit the first bad one), tells the culprit's tests: the first time its issue opens, later a comment
  lists the tests it did not list yet (an issue closed meanwhile opens again).
- Each newly recorded upstream or forced build of a backend on one of its branches (history_recorder.py) closes
  every open issue whose tests all ran in a suite that ran whole and none of them failed: a comment saying where
  they pass again, then the issue closed.

Only for backends with `issues: true`. The culprit's row (store/culprit_issues.py) takes each change once, so two
masters leading for a moment write each step to the outbox once.
"""

from __future__ import annotations

from buildbot.process.results import FAILURE, SUCCESS, WARNINGS
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.github import culprit_issue_text as text
from crcr.github.issue_sender import issue_sender
from crcr.health.links import build_url
from crcr.names import SUITE_SEPARATOR, key_of
from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow
from crcr.store.service import relay_store

CLOSING_KINDS = ("upstream", "forced")  # builds of the backend's commits, not a bisection's or a PR's
RAN_TO_AN_END = (SUCCESS, WARNINGS, FAILURE)  # a suite run whose passing tests passed (not one cut short)


@defer.inlineCallbacks
def culprit_found(master, backend: str, sha: str, tests: list[str], bisectionid: int | None,
                  bisection_url: str | None, build_urls: list[str], now: float):
    """Commit `sha` broke `tests` of `backend` (found by bisection `bisectionid`, or by a build right after its
    baseline): its issue opened, or told the tests it does not list yet."""
    sender = issue_sender(master)
    if sender is None or backend not in sender.targets or not tests:
        return
    target = sender.targets[backend]
    told = yield relay_store(master).record_culprit_break(backend, sha, target.repo, tests, bisectionid, now)
    if told is None:
        return
    if told.opened:
        culprit = yield _culprit(master, sha)
        log.msg(f"crcr: {backend} broken by {sha[:10]}: its issue on {target.repo} opens ({len(tests)} tests)")
        yield sender.tell(backend, sha, {
            "action": "open", "marker": text.marker(backend, sha), "title": text.title(backend, culprit),
            "body": text.opening_body(backend, culprit, sender.upstream,
                                      sender.commit_url + sha if sender.commit_url else None, told.tests,
                                      bisection_url, build_urls, list(target.maintainers))})
        return
    yield sender.tell(backend, sha, {"action": "comment",
                                     "body": text.added_body(told.tests, bisection_url, build_urls, told.reopened)})
    if told.reopened:
        yield sender.tell(backend, sha, {"action": "state", "state": "open", "tests": told.tests})


@defer.inlineCallbacks
def _culprit(master, sha: str):
    try:
        commit = yield upstream_mirror(master).describe_commit(sha)
    except revisions.RevisionError as e:  # the mirror lacks it: named by its sha alone
        log.msg(f"crcr: the issue of culprit {sha[:10]} names no pull request: {e}")
        return text.culprit_of(sha, "")
    return text.culprit_of(sha, commit.message)


@defer.inlineCallbacks
def build_recorded(master, build: BuildRow, suites: list[SuiteRunRow], outcomes: list[TestOutcomeRow]):
    """A build newly recorded: the backend's open issues whose tests it passed, closed."""
    sender = issue_sender(master)
    target = None if sender is None else sender.targets.get(build.backend)
    if target is None or build.kind not in CLOSING_KINDS or build.branch not in target.branches:
        return
    store = relay_store(master)
    whole = {run.suite for run in suites if run.broken is None and run.results in RAN_TO_AN_END}
    green = {run.suite for run in suites if run.broken is None and run.results in (SUCCESS, WARNINGS)}
    # Such a build's outcomes are its failing, flaky and disabled tests: any other that ran passed.
    not_passed = {key_of(test.suite, test.test) for test in outcomes}

    def passes(test: str) -> bool:
        """A test of a suite that ran whole, not among the outcomes; a whole suite's break (a command suite
        without tests of its own), the suite passing."""
        suite, separator, _ = test.partition(SUITE_SEPARATOR)
        return suite in whole and test not in not_passed if separator else suite in green

    url = sender.web_url + build_url(build.builderid, build.number)
    for issue in (yield store.open_culprit_issues(build.backend)):
        passed = all(passes(test) for test in issue.tests)
        if passed and (yield store.close_culprit_issue(issue.id, build.complete_at)):
            log.msg(f"crcr: {build.backend}'s issue of culprit {issue.sha[:10]} closes: its tests pass at "
                    f"{build.sha[:10]}")
            yield sender.tell(build.backend, issue.sha, {"action": "comment",
                                                          "body": text.closing_body(build.sha, url)})
            yield sender.tell(build.backend, issue.sha, {"action": "state", "state": "closed",
                                                          "build": build.buildid})
