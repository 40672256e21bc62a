"""The build requests no unit has claimed, and whose commits each keeps waiting, read from Buildbot's data API for
the stale watch (services/leader/stale.py).

A request of a builder holding its own commits (a serial build, a fanned-out backend's parent) holds its backend's;
a child's or a build stage's request, its parent's; a shared build's request, those of the running parents of every
backend using it, at its commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot.data import resultspec
from twisted.internet import defer

from crcr.names import CHILD_SUITE_PROPERTY
from crcr.plan.builds import Holds, PlannedBuilder


@dataclass(frozen=True)
class Asked:
    """What a waiting build request asks for: its scheduler, its commit, when it was submitted."""

    scheduler: str
    sha: str
    submitted_at: float
    suite: str | None = None  # a child's suite


class WaitingRequests:
    """The requests waiting: what each asks is read once (it never changes), and forgotten once it waits no more."""

    def __init__(self, master):
        self.master = master
        self._asked: dict[int, Asked] = {}  # waiting requests seen, by id

    @defer.inlineCallbacks
    def waiting(self, builders: tuple[PlannedBuilder, ...]):
        """(backend, request holding its commits, builder, what the waiting request asks) of every build request no
        unit has claimed. Forgets the requests no longer waiting."""
        requests = yield self.master.data.get(("buildrequests",), filters=[
            resultspec.Filter("claimed", "eq", [False]), resultspec.Filter("complete", "eq", [False])])
        names = {b["builderid"]: b["name"] for b in (yield self.master.data.get(("builders",)))}
        waiting = {r["buildrequestid"] for r in requests}
        self._asked = {brid: asked for brid, asked in self._asked.items() if brid in waiting}
        watched = {w.name: w for w in builders}
        found = []
        for request in sorted(requests, key=lambda r: r["buildrequestid"]):
            builder = watched.get(names.get(request["builderid"]))
            if builder is None:
                continue
            asked = yield self.asked(request)
            if builder.holds is Holds.ITS_OWN:
                found.append((builder.backends[0], request, builder.name, asked))
            elif builder.holds is Holds.ITS_PARENTS:
                parent = yield self._parent_request(request)
                if parent is not None:
                    found.append((builder.backends[0], parent, builder.name, asked))
            else:
                for backend, parent in (yield self._parents_at_commit(request, builder.backends, names)):
                    found.append((backend, parent, builder.name, asked))
        return found

    @defer.inlineCallbacks
    def _parents_at_commit(self, shared_request: dict, backends: tuple[str, ...], names: dict[int, str]):
        """(backend, parent's request) of each running parent of `backends` at the commit of a shared build's
        request: they wait for it, whichever of them triggered it."""
        sha = (yield self.asked(shared_request)).sha
        ids = {name: builderid for builderid, name in names.items()}
        found = []
        for backend in backends:
            running = yield self.master.data.get(("builders", ids[backend], "builds"),
                                                 filters=[resultspec.Filter("complete", "eq", [False])])
            for build in running:
                request = yield self.master.data.get(("buildrequests", build["buildrequestid"]))
                if request is not None and (yield self.asked(request)).sha == sha:
                    found.append((backend, request))
        return found

    @defer.inlineCallbacks
    def _parent_request(self, child_request: dict):
        """The request of the parent build that triggered a child's request; None when it cannot be found."""
        buildset = yield self.master.data.get(("buildsets", child_request["buildsetid"]))
        if buildset is None or buildset["parent_buildid"] is None:
            return None
        parent = yield self.master.data.get(("builds", buildset["parent_buildid"]))
        return None if parent is None else (yield self.master.data.get(("buildrequests", parent["buildrequestid"])))

    @defer.inlineCallbacks
    def asked(self, request: dict):
        """What `request` asks, read once."""
        brid = request["buildrequestid"]
        if brid not in self._asked:
            buildset = yield self.master.data.get(("buildsets", request["buildsetid"]))
            properties = yield self.master.data.get(("buildsets", request["buildsetid"], "properties"))
            self._asked[brid] = Asked(properties.get("scheduler", (None,))[0], buildset["sourcestamps"][0]["revision"],
                                      request["submitted_at"].timestamp(),
                                      properties.get(CHILD_SUITE_PROPERTY, (None,))[0])
        return self._asked[brid]
