"""A child never outlives its parent: the leader cancels what a parent build triggered once that parent has ended.

Buildbot's Trigger cancels its children when its step is interrupted (steps/child_trigger.py). Nothing does when the
parent's master dies: Buildbot's housekeeping ends that master's builds (RETRY) and hands their requests to another
master, which builds the parent again and triggers its children anew, while the children of the lost parent, on
units connected to other masters, would run on for nobody. Their requests are cancelled, as Buildbot's UI cancels
one (a waiting request is cancelled, a running build stopped, on whichever master runs it; a cancel that comes
twice does nothing more). Shared builds are nobody's child and are left alone.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.util.consumer import MessageConsumer
from crcr.buildmaster.util.leader_duty import LeaderDuty
from crcr.names import RELAY_WORKER


class OrphanedChildren(LeaderDuty, MessageConsumer):
    name = "crcr-orphaned-children"

    def subscriptions(self):
        return [(("builds", None, "finished"), self._build_finished)]

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        yield self.start_duty()

    def lead(self):
        """Parents that ended while no master of this one's led."""
        return self.cancel_orphans()

    def _build_finished(self, key, build: dict):
        relay = self.master.workers.workers.get(RELAY_WORKER)
        if self.leads() and relay is not None and build["workerid"] == relay.workerid:
            return self.cancel_orphans()
        return None

    @defer.inlineCallbacks
    def cancel_orphans(self):
        """Cancel every request not complete whose buildset's parent build has ended."""
        for buildset in (yield self.master.db.buildsets.getBuildsets(complete=False)):
            if buildset.parent_buildid is None:
                continue
            parent = yield self.master.db.builds.getBuild(buildset.parent_buildid)
            if parent is not None and parent.complete_at is None:
                continue
            requests = yield self.master.db.buildrequests.getBuildRequests(bsid=buildset.bsid, complete=False)
            for request in requests:
                log.msg(f"crcr: cancelling build request {request.buildrequestid}: its parent build "
                        f"{buildset.parent_buildid} has ended")
                yield self.master.data.control(
                    "cancel", {"reason": f"its parent build {buildset.parent_buildid} has ended"},
                    ("buildrequests", request.buildrequestid))
