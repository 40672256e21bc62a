"""Each build's status posted once among several masters: every master hears every event through the router, so
Buildbot's reporters would each write the same status to the outbox.

A build's events are reported by the master that runs it (the event says which), or by the leader once that master
is gone (Buildbot's housekeeping ends its builds RETRY); a build request's (queued, cancelled before a build) by the
leader, which also decides the commits no build of their own reports on (the ledger).
"""

from __future__ import annotations

from twisted.internet import defer

from crcr.names import leads


@defer.inlineCallbacks
def reports_here(master, key: tuple, message: dict):
    if key[0] != "builds":
        return leads(master)
    if message["masterid"] == master.masterid:
        return True
    if not leads(master):
        return False
    runner = yield master.db.masters.getMaster(message["masterid"])
    return runner is None or not runner.active


class ReportedOnce:
    """Mixed into a Buildbot reporter (before it): it reports the events reports_here says are this master's."""

    @defer.inlineCallbacks
    def _got_event(self, key, msg):
        if (yield reports_here(self.master, key, msg)):
            yield super()._got_event(key, msg)
