"""The ledger service: every upstream commit of every backend, from its arrival to its final verdict.

A commit arrives with its build request (of the backend's upstream or force scheduler). With `queue: newest` its
request may be collapsed into a newer one (coalescing.py notes the approval in the store, Buildbot then completes
the old request SKIPPED, unless a unit claimed it first): the newer request's build then covers it, and when that
build ends the ledger gives the covered commit its verdict, posted to GitHub as the build's own is (GitHub's
reporter posts only for the commit a build checked out):
- the build passed: success, 'Not built alone; <sha> on top of it passed';
- it has new failures and a known good commit lies more than one commit back: the bisector takes the range,
  and the covered commits stay pending ('Bisecting ...') until it decides them;
- otherwise: the build's state, 'Not built alone; <sha> on top of it: <its description>'.
Each row records when the commit was seen, when a build of it (or covering it) started and when its first
verdict was posted: the commit-to-verdict latency (`crcr latency`).

Buildbot's mq delivers each message to each consumer without waiting for the previous one's work, so the
ledger handles them one at a time, in order (an arrival before the collapse of its request, say).
"""

from __future__ import annotations

from buildbot.data import resultspec
from buildbot.process.results import CANCELLED, FAILURE, RETRY, SKIPPED, SUCCESS, WARNINGS
from buildbot.reporters.utils import getDetailsForBuild
from buildbot.util import datetime2epoch
from buildbot.util.state import StateMixin
from twisted.internet import defer

from crcr.bisection.plan import Bisection
from crcr.buildmaster.services.leader.bisector import Bisector
from crcr.buildmaster.services.leader.ordered import OrderedLeaderService
from crcr.github import status_text
from crcr.github.commit_status import post_status
from crcr.github.formatting import what_the_store_adds
from crcr.health.links import backend_page, build_url
from crcr.names import (
    BACKEND_PROPERTY,
    BISECTION_PROPERTY,
    LEDGER_SERVICE,
    force_scheduler_name,
    upstream_scheduler_name,
)
from crcr.store.buildbot_tables import origin_of
from crcr.store.service import relay_store
from crcr.store.tables.ledger import NOT_RELEVANT

# GitHub's state for a finished build, as Buildbot's GitHubStatusPush posts it (RETRY: built again, no verdict).
GITHUB_STATES = {SUCCESS: "success", WARNINGS: "success", SKIPPED: "success", FAILURE: "failure"}


def github_state(results: int) -> str:
    return GITHUB_STATES.get(results, "error")


# Object state (shared by the masters: the same service name): the newest build request whose arrival was recorded.
LAST_REQUEST = "last_request"


class CommitLedger(OrderedLeaderService, StateMixin):
    """On the leader only (OrderedLeaderService): every master hears every event, and a verdict is posted once.
    A request added while no master led (one stopping, the next not yet leading) is recorded when the next leads."""

    name = LEDGER_SERVICE

    def checkConfig(self, reporting, github_repo, upstream_url, web_url):
        pass

    def reconfigService(self, reporting, github_repo, upstream_url, web_url):
        """`reporting`: the backends whose verdicts go to GitHub (L2 and up); the rest are only recorded."""
        self.reporting, self.github_repo, self.upstream_url = frozenset(reporting), github_repo, upstream_url
        self.web_url = web_url.rstrip("/") + "/"

    def __init__(self, *args, **kwargs):
        self._last_request: int | None = None
        self.bisector = Bisector(self)
        super().__init__(*args, **kwargs)

    @property
    def store(self):
        return relay_store(self.master)

    def subscriptions(self):
        return [(("buildrequests", None, "new"), self._request_added),
                (("builds", None, "finished"), self._build_finished),
                (("buildrequests", None, "complete"), self._request_completed)]

    def now(self) -> float:
        return self.master.reactor.seconds()

    def build_url(self, build: dict) -> str:
        return self.web_url + build_url(build["builderid"], build["number"])

    def post(self, backend: str, sha: str, state: str, description: str, target_url: str) -> None:
        """A status the relay posts itself, for a commit no build of its own reports on (L2 and up only)."""
        if backend in self.reporting:
            post_status(self.master, self.github_repo, backend, sha, state, description, target_url)

    @defer.inlineCallbacks
    def not_relevant(self, backend: str, change, why: str):
        """The commit of `change`, which does not concern `backend` (config/relevance.py): decided at once as a
        success that says `why`, unbuilt, its status linking the backend's health page. Its upstream scheduler
        calls this, on whichever master it runs; a commit decided already (forced before its push came) keeps its
        verdict."""
        sha, now = change.revision, self.now()
        origin = yield self.master.db.pool.do(origin_of, self.master.db.model, sha)
        yield self.store.record_arrival(backend, sha, change.branch or "", now, origin=origin)
        if (yield self.store.find_commit(backend, sha)).decided_at is None:
            yield self.store.decide(backend, sha, "success", why, NOT_RELEVANT, None, now)
            self.post(backend, sha, "success", why, self.web_url + backend_page(backend))

    # --- what Buildbot tells ---

    def _request_added(self, key, request):
        return self._record_request(request, self.now())

    @defer.inlineCallbacks
    def _record_request(self, request, seen_at: float):
        asked = yield self._asked(request)
        if asked is not None:
            backend, scheduler, stamp, _ = asked
            if scheduler in (upstream_scheduler_name(backend), force_scheduler_name(backend)):
                origin = yield self.master.db.pool.do(origin_of, self.master.db.model, stamp["revision"])
                yield self.store.record_arrival(backend, stamp["revision"], stamp["branch"] or "", seen_at,
                                                brid=request["buildrequestid"], description=status_text.QUEUED,
                                                origin=origin)
        yield self._recorded_up_to(request["buildrequestid"])

    @defer.inlineCallbacks
    def _recorded_up_to(self, brid: int):
        if brid > (self._last_request or 0):
            self._last_request = brid
            yield self.setState(LAST_REQUEST, brid)

    @defer.inlineCallbacks
    def _catch_up_arrivals(self):
        """The requests added since the last one recorded, in order: from the newest request of the ledger's rows
        when no watermark was kept yet (a relay upgraded), from the first on a new relay (a request added before
        its first leader took the lead)."""
        self._last_request = yield self.getState(LAST_REQUEST, None)
        if self._last_request is None:
            self._last_request = (yield self.store.newest_request()) or 0
        later = yield self.master.data.get(
            ("buildrequests",), filters=[resultspec.Filter("buildrequestid", "gt", [self._last_request])],
            order=["buildrequestid"])
        for request in later:
            # When it was asked: the data API's time (a message's over the router is epoch seconds instead).
            yield self._record_request(request, datetime2epoch(request["submitted_at"]))

    @defer.inlineCallbacks
    def build_started(self, brid: int, backend: str, sha: str, worker: str | None):
        """The commits the build of request `brid` covers (its own commit left out), once it has started on
        `worker`: the collapses of its request are all recorded by then. Called by the build's first step."""
        return (yield self.in_order(self._started, brid, backend, sha, worker))

    @defer.inlineCallbacks
    def _started(self, brid, backend, sha, worker):
        yield self.store.take_into_request(backend, sha, brid)
        # Until its verdict, its commit says where it runs, as its GitHub status does ('crcr status', the health).
        yield self.store.set_pending_description(backend, sha, status_text.running(worker))
        yield self.store.mark_started(brid, self.now())
        return (yield self._covered(brid, sha))

    @defer.inlineCallbacks
    def _covered(self, brid: int, sha: str):
        """The undecided commits request `brid` covers: those it builds, but for its own commit `sha`."""
        rows = yield self.store.commits_of_request(brid)
        return [row for row in rows if row.sha != sha and row.decided_at is None]

    @defer.inlineCallbacks
    def _build_finished(self, key, build):
        build = yield self.with_details(build)
        properties = build["properties"]
        if BISECTION_PROPERTY in properties:
            yield self.bisector.step_finished(build)
            return
        backend = properties.get(BACKEND_PROPERTY, (None,))[0]
        scheduler = properties.get("scheduler", (None,))[0]
        if backend is None or scheduler not in (upstream_scheduler_name(backend), force_scheduler_name(backend)):
            return
        if build["results"] == RETRY:  # Buildbot builds the request again: that build decides
            sha = build["buildset"]["sourcestamps"][0]["revision"]
            yield self.store.set_pending_description(backend, sha, status_text.describe({"build": build}))
            return
        how = "forced" if scheduler == force_scheduler_name(backend) else "built"
        yield self._decide_build(build, backend, how)

    @defer.inlineCallbacks
    def _decide_build(self, build, backend, how):
        sha = build["buildset"]["sourcestamps"][0]["revision"]
        state = github_state(build["results"])
        description = status_text.describe({"build": build, **(yield what_the_store_adds(self.master, build))})
        hardware = status_text.hit_the_hardware(build)
        yield self.store.decide(backend, sha, state, description, how, build["buildid"], self.now(), hardware)
        covered = yield self._covered(build["buildrequestid"], sha)
        started = yield self.store.bisections_triggered_by(build["buildid"])  # seen before a restart
        if started:
            bisecting = set(Bisection.from_json(started[0].plan).commits)
        elif state == "failure":
            bisecting = yield self.bisector.start_for_new_failures(build, backend, sha, [row.sha for row in covered])
        else:
            bisecting = set()
        for row in covered:
            if row.sha not in bisecting:
                text = status_text.covered(sha, state, description)
                yield self.store.decide(backend, row.sha, state, text, "covered", build["buildid"], self.now(),
                                        hardware)
                self.post(backend, row.sha, state, text, self.build_url(build))

    @defer.inlineCallbacks
    def _request_completed(self, key, request):
        """A request collapsed into a newer one hands its commits over; a request cancelled before any build of
        it gives its commits the 'Cancelled' its own commit got."""
        if request["results"] == SKIPPED:
            # Only an approval is noted: a unit may claim the old request before the collapser does, and build it
            # after all; its commits move when the collapser completes it SKIPPED.
            newer = yield self.store.collapsed_into(request["buildrequestid"])
            if newer is not None:
                yield self.store.move_to_request(request["buildrequestid"], newer)
            return
        if request["results"] != CANCELLED:
            return  # built: its build decided
        of_request = yield self.store.commits_of_request(request["buildrequestid"])
        rows = [row for row in of_request if row.decided_at is None]
        step = yield self.store.step_of_request(request["buildrequestid"])
        if step is not None:
            yield self.bisector.step_cancelled(step)
        asked = yield self._asked(request)
        if not rows or asked is None:
            return
        backend, scheduler, stamp, _ = asked
        cancelled = status_text.describe_finished_build({"results": CANCELLED})
        how_own = "forced" if scheduler == force_scheduler_name(backend) else "built"
        for row in rows:
            own = row.sha == stamp["revision"]
            text = cancelled if own else status_text.covered(stamp["revision"], "error", cancelled)
            yield self.store.decide(backend, row.sha, "error", text, how_own if own else "covered", None, self.now())
            if not own:  # Buildbot's reporter posted the own commit's
                self.post(backend, row.sha, "error", text, f"{self.web_url}#/buildrequests/{request['buildrequestid']}")

    # --- after a restart ---

    @defer.inlineCallbacks
    def catch_up(self):
        """What happened while no master led (this one down, or between leaders): the requests added meanwhile
        are recorded, the undecided commits of finished requests get their verdicts as if the master had seen the
        end, and the running bisections go on."""
        yield self._catch_up_arrivals()
        brids = sorted({row.brid for row in (yield self.store.pending_commits()) if row.brid is not None})
        for brid in brids:
            yield self._settle(brid)
        yield self.bisector.resume()

    @defer.inlineCallbacks
    def _settle(self, brid: int):
        """The commits of a request that ended while the master was down: decided by its build, handed to the
        request it was collapsed into, or cancelled."""
        request = yield self.master.data.get(("buildrequests", brid))
        if request is None or not request["complete"]:
            return
        # An interrupted build (RETRY) decided nothing: its request went back to the queue, where it was built
        # again, collapsed into a newer one or cancelled.
        finished = [b for b in (yield self.master.data.get(("buildrequests", brid, "builds")))
                    if b["complete"] and b["results"] != RETRY]
        if finished:
            yield self._build_finished(None, finished[-1])
        elif request["results"] == SKIPPED:
            newer = yield self.store.collapsed_into(brid)
            if newer is not None:
                yield self.store.move_to_request(brid, newer)
                yield self._settle(newer)
        else:
            yield self._request_completed(None, request)

    # --- reading Buildbot's data ---

    @defer.inlineCallbacks
    def with_details(self, build):
        build = dict(build)
        yield getDetailsForBuild(self.master, build, want_properties=True, want_steps=True)
        return build

    @defer.inlineCallbacks
    def _asked(self, request):
        """(backend, scheduler, sourcestamp, properties) of a build request; None for a builder that is no
        backend's."""
        builder = yield self.master.data.get(("builders", request["builderid"]))
        buildset = yield self.master.data.get(("buildsets", request["buildsetid"]))
        properties = yield self.master.data.get(("buildsets", request["buildsetid"], "properties"))
        if builder is None or buildset is None or not buildset["sourcestamps"]:
            return None
        return builder["name"], properties.get("scheduler", (None,))[0], buildset["sourcestamps"][0], properties

