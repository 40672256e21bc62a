"""The bisector: drives bisections (bisection/plan.py decides) one build at a time, and posts their verdicts
(bisection/verdicts.py words them).

A bisection starts when a build has new failures (failing now, passing at the commit its suites were compared
with) and more than one first-parent commit lies between that commit and the build's; or by hand (the
backend's bisect scheduler, `crcr bisect`). Each step is a build of one commit of the range on the backend's
builder, asked through the backend's bisect scheduler with a high priority (it goes before queued upstream
builds) and build properties naming the bisection and the tests to run. When it ends, the outcome of each test
is recorded, and the next step asked, until each test has its first bad commit. Then every commit of the range
that was not built alone gets its verdict. The state lives in the relay's tables (store/bisections.py), so a
restarted master goes on where it stood.

It runs inside the ledger (ledger.py), one message at a time, on the relay's leader only; a master that takes the
lead resumes the running bisections (resume(), from the ledger's catching up). Two masters leading for a moment
start a bisection, ask a step's build and record its end once (store/bisections.py's unique keys): the second
finds the row there and does nothing more.
"""

from __future__ import annotations

from dataclasses import asdict

from buildbot.process.properties import Properties
from buildbot.process.results import CANCELLED, RETRY
from twisted.internet import defer
from twisted.python import log

from crcr.bisection.build_properties import new_failures, only_tests, outcomes_of
from crcr.bisection.plan import Bisection
from crcr.bisection.verdicts import final_verdicts
from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.buildmaster.services.leader.culprit_issues import culprit_found
from crcr.github import status_text
from crcr.health.links import bisection_page
from crcr.names import (
    BASELINES_PROPERTY,
    BISECTION_PRIORITY,
    BISECTION_PROPERTY,
    ONLY_TESTS_PROPERTY,
    TEST_OUTCOMES_PROPERTY,
    bisect_scheduler_name,
    key_of,
)

RECENT_BISECTIONS = 20  # looked at for a break another build's bisection already took on


class Bisector:
    def __init__(self, ledger):
        self.ledger = ledger

    @property
    def master(self):
        return self.ledger.master

    @property
    def store(self):
        return self.ledger.store

    def page_url(self, bisectionid: int) -> str:
        return self.ledger.web_url + bisection_page(bisectionid)

    def _range(self, good: str, bad: str):
        return upstream_mirror(self.master).first_parent_range(good, bad)

    # --- starting ---

    @defer.inlineCallbacks
    def start_for_new_failures(self, build: dict, backend: str, bad: str, covered: list[str]):
        """Starts bisecting the build's new failures when more than one commit lies between its baseline and
        it; returns the covered commits the bisection decides (pending 'Bisecting ...' meanwhile)."""
        properties = build["properties"]
        failing = new_failures(properties)
        baselines = properties.get(BASELINES_PROPERTY, ({},))[0] or {}
        # A suite compared with nothing has no commit known good to start from.
        known_good = {suite: baselines[suite] for suite in failing if baselines.get(suite)}
        if not known_good:
            return set()
        commits = []
        for good in set(known_good.values()):  # the suites' baselines may differ: the widest range holds the others
            try:
                found = yield self._range(good, bad)
            except revisions.RevisionError as e:
                log.msg(f"crcr bisector: not bisecting build {build['buildid']}: {e}")
                return set()
            if len(found) > len(commits):
                commits, start = found, good
        # A commit that changes nothing the backend builds or runs cannot have broken it: not built, not named.
        unbuilt = yield self.store.not_relevant_among(backend, commits)
        commits = [sha for sha in commits if sha not in unbuilt]
        tests = [key_of(suite, node_id) for suite in known_good for node_id in failing[suite]]
        if len(commits) < 2:  # the build's own commit is the first bad one
            if commits == [bad]:
                yield culprit_found(self.master, backend, bad, tests, None, None, [self.ledger.build_url(build)],
                                    self.ledger.now())
            return set()
        # Builds running side by side compare with the same baseline, so each reports a break as new: a test that
        # a bisection ending inside this range bisects (or did) has its first bad commit there already.
        bisected = yield self._bisected_up_to(backend, commits)
        tests = [test for test in tests if test not in bisected]
        if not tests:
            return set()
        branch = build["buildset"]["sourcestamps"][0]["branch"] or ""
        bisectionid = yield self._start(backend, branch, start, bad, commits, tests, trigger_buildid=build["buildid"])
        deciding = [sha for sha in covered if sha in commits]
        text = status_text.bisecting(len(commits), bad)
        for sha in deciding:
            yield self.store.set_pending_description(backend, sha, text)
            self.ledger.post(backend, sha, "pending", text, self.page_url(bisectionid))
        return set(deciding)

    @defer.inlineCallbacks
    def _bisected_up_to(self, backend: str, commits: list[str]):
        """The tests of the backend's recent bisections (not abandoned) whose bad end is one of `commits`."""
        tests = set()
        for other in (yield self.store.recent_bisections(backend, RECENT_BISECTIONS)):
            if other.state != "abandoned" and other.bad_sha in commits:
                tests.update(Bisection.from_json(other.plan).tests)
        return tests

    def start_by_hand(self, backend: str, branch: str, good: str, bad: str, commits: list[str], tests: list[str],
                      requested_by: str) -> defer.Deferred:
        """A bisection a user asked for, of `commits` (first_parent_range(good, bad)); gives its id."""
        # In the ledger's order, as a bisection started by a build is: its steps' ends are handled after it.
        return self.ledger.in_order(self._start, backend, branch, good, bad, commits, tests, requested_by=requested_by)

    @defer.inlineCallbacks
    def _start(self, backend, branch, good, bad, commits, tests, trigger_buildid=None, requested_by=None):
        bisectionid = yield self.store.create_bisection(
            backend, branch, good, bad, Bisection(commits, tests).to_json(), self.ledger.now(),
            trigger_buildid=trigger_buildid, requested_by=requested_by,
        )
        log.msg(f"crcr bisector: bisection {bisectionid} of {backend}: {len(commits)} commits after {good[:10]} "
                f"up to {bad[:10]}, {len(tests)} tests")
        # The stored plan: the range's running bisection may be another master's, steps ahead.
        bisection, _ = yield self.store.bisection_with_steps(bisectionid)
        yield self._advance(bisection, Bisection.from_json(bisection.plan))
        return bisectionid

    # --- each step ---

    @defer.inlineCallbacks
    def _advance(self, bisection, plan: Bisection):
        step = plan.next_step()
        if step is None:
            yield self._finish(bisection, plan)
            return
        scheduler = yield self._scheduler(bisection)
        if scheduler is None:
            return
        stepid = yield self.store.add_step(bisection.id, step.index, step.sha, list(step.tests), self.ledger.now())
        if stepid is None:
            return  # asked already (by another master leading for a moment): its end goes on
        yield self._ask(scheduler, bisection, len(plan.commits), stepid, step.index, step.sha, step.tests)

    @defer.inlineCallbacks
    def _scheduler(self, bisection):
        """The backend's bisect scheduler; None, the bisection abandoned, when the backend is gone (its file removed
        at a reconfig)."""
        scheduler = self.master.scheduler_manager.namedServices.get(bisect_scheduler_name(bisection.backend))
        if scheduler is None:
            yield self._abandon(bisection, f"backend {bisection.backend} is no longer configured")
        return scheduler

    @defer.inlineCallbacks
    def _ask(self, scheduler, bisection, commits: int, stepid: int, index: int, sha: str, tests):
        """Asks the build of a step; when another master's request for it was recorded first, cancels its own."""
        properties = Properties()
        properties.setProperty(BISECTION_PROPERTY, bisection.id, "crcr")
        properties.setProperty(ONLY_TESTS_PROPERTY, only_tests(tests), "crcr")
        _, brids = yield scheduler.addBuildsetForSourceStamps(
            waited_for=False,
            sourcestamps=[{"codebase": "", "repository": self.ledger.upstream_url, "branch": bisection.branch,
                           "revision": sha, "project": self.ledger.github_repo}],
            reason=f"bisection {bisection.id}: commit {index + 1} of {commits}",
            properties=properties,
            builderNames=[bisection.backend],
            priority=BISECTION_PRIORITY,
        )
        brid = next(iter(brids.values()))
        if not (yield self.store.ask_step(stepid, brid)):
            log.msg(f"crcr bisector: step {stepid} of bisection {bisection.id} was asked by another master too: "
                    f"request {brid} cancelled")
            yield self.master.data.control("cancel", {"reason": "asked twice"}, ("buildrequests", brid))

    @defer.inlineCallbacks
    def step_finished(self, build: dict):
        found = yield self._running_step(build["buildrequestid"])
        # A retried build is built again, its end recorded then: also one its master's stop cut short
        # (relay_build.py), whether or not the stopping master's services outlived it.
        if found is None or build["results"] == RETRY:
            return
        bisection, step = found
        if build["results"] == CANCELLED:
            yield self._abandon(bisection, f"its build of {step.sha[:10]} was cancelled")
            return
        plan = Bisection.from_json(bisection.plan)
        recorded = build["properties"].get(TEST_OUTCOMES_PROPERTY, ({},))[0] or {}
        outcomes = outcomes_of(step.tests, recorded)
        if outcomes:
            plan.record(step.position, outcomes)
        else:
            plan.record_skip(step.position)
        if not (yield self.store.end_step(step.id, buildid=build["buildid"], outcome=plan.steps[-1].verdict,
                                          results=outcomes, ended_at=self.ledger.now())):
            return  # another master leading for a moment recorded this end, and goes on
        yield self.store.update_bisection(bisection.id, plan=plan.to_json())
        yield self._advance(bisection, plan)

    @defer.inlineCallbacks
    def step_cancelled(self, step):
        """A step's request cancelled before it was built: the user stopped the bisection."""
        found = yield self._running_step(step.brid)
        if found is not None:
            yield self._abandon(found[0], f"its build of {step.sha[:10]} was cancelled")

    @defer.inlineCallbacks
    def _running_step(self, brid: int):
        step = yield self.store.step_of_request(brid)
        if step is None or step.outcome != "pending":
            return None
        bisection, _ = yield self.store.bisection_with_steps(step.bisectionid)
        return (bisection, step) if bisection.state == "running" else None

    # --- the end ---

    @defer.inlineCallbacks
    def _finish(self, bisection, plan: Bisection):
        result = plan.result()
        yield self.store.update_bisection(bisection.id, plan=plan.to_json(), state="done", result=asdict(result),
                                          ended_at=self.ledger.now())
        named = ", ".join(f"{c.sha[:10]} ({len(c.tests)} tests)" for c in result.culprits)
        log.msg(f"crcr bisector: bisection {bisection.id} of {bisection.backend} done: first bad commits {named}")
        # Commits built alone keep their own build's verdict; the others get the bisection's.
        undecided = yield self._not_built_alone(bisection.backend, result.commits)
        for sha, (state, text) in final_verdicts(result, undecided).items():
            yield self.store.decide(bisection.backend, sha, state, text, "bisected", None, self.ledger.now())
            self.ledger.post(bisection.backend, sha, state, text, self.page_url(bisection.id))
        yield self._tell_culprits(bisection, result)

    @defer.inlineCallbacks
    def _tell_culprits(self, bisection, result):
        """Each first bad commit to its issue (culprit_issues.py), with the build whose new failures started it."""
        trigger = None if bisection.trigger_buildid is None else (
            yield self.master.data.get(("builds", bisection.trigger_buildid)))
        builds = [] if trigger is None else [self.ledger.build_url(trigger)]
        for culprit in result.culprits:
            yield culprit_found(self.master, bisection.backend, culprit.sha, list(culprit.tests), bisection.id,
                                self.page_url(bisection.id), builds, self.ledger.now())

    @defer.inlineCallbacks
    def _abandon(self, bisection, why: str):
        yield self.store.update_bisection(bisection.id, state="abandoned", ended_at=self.ledger.now())
        log.msg(f"crcr bisector: bisection {bisection.id} of {bisection.backend} abandoned: {why}")
        text = status_text.covered(bisection.bad_sha, "failure", f"new failures; bisection abandoned: {why}")
        for sha in (yield self._pending(bisection.backend, Bisection.from_json(bisection.plan).commits)):
            yield self.store.decide(bisection.backend, sha, "failure", text, "covered", None, self.ledger.now())
            self.ledger.post(bisection.backend, sha, "failure", text, self.page_url(bisection.id))

    @defer.inlineCallbacks
    def _not_built_alone(self, backend: str, commits):
        rows = yield self._rows(backend, commits)
        return [row.sha for row in rows if row.how not in ("built", "forced")]

    @defer.inlineCallbacks
    def _pending(self, backend: str, commits):
        rows = yield self._rows(backend, commits)
        return [row.sha for row in rows if row.decided_at is None]

    @defer.inlineCallbacks
    def _rows(self, backend: str, commits):
        """The ledger's rows of `commits`; a commit the relay never saw has none, and gets no status."""
        rows = []
        for sha in commits:
            row = yield self.store.find_commit(backend, sha)
            if row is not None:
                rows.append(row)
        return rows

    # --- after a restart ---

    @defer.inlineCallbacks
    def resume(self):
        """Each running bisection goes on: a step that ended while the master was down is recorded, a bisection
        between steps asks for its next."""
        for bisection in (yield self.store.running_bisections()):
            _, steps = yield self.store.bisection_with_steps(bisection.id)
            pending = [step for step in steps if step.outcome == "pending"]
            if not pending:
                yield self._advance(bisection, Bisection.from_json(bisection.plan))
                continue
            step = pending[-1]
            if step.brid is None:  # the leader stopped between recording the step and asking its build
                scheduler = yield self._scheduler(bisection)
                if scheduler is not None:
                    commits = len(Bisection.from_json(bisection.plan).commits)
                    yield self._ask(scheduler, bisection, commits, step.id, step.position, step.sha, step.tests)
                continue
            request = yield self.master.data.get(("buildrequests", step.brid))
            if request is None or not request["complete"]:
                continue  # its build is still to come: the ledger hears of its end
            builds = [b for b in (yield self.master.data.get(("buildrequests", step.brid, "builds"))) if b["complete"]]
            if builds:
                yield self.step_finished((yield self.ledger.with_details(builds[-1])))
            else:
                yield self.step_cancelled(step)
