"""The relay's own moves of flaky tests in and out of quarantine (store/quarantine.py), after each build the leader's
history recorder newly records: the backends' `quarantine:` settings, kept at each reconfig, applied to it."""

from __future__ import annotations

from buildbot.util import service
from twisted.internet import defer
from twisted.python import log

from crcr.store.history import BuildRow
from crcr.store.quarantine import Policy
from crcr.store.service import relay_store

QUARANTINE_SERVICE = "crcr-quarantine"


class QuarantineKeeper(service.BuildbotService):
    name = QUARANTINE_SERVICE

    def checkConfig(self, policies: dict[str, dict]):
        pass

    def reconfigService(self, policies: dict[str, dict]):
        """`policies`: {backend: its `quarantine:` as a dict} of every backend file loaded."""
        self.policies = {backend: Policy(**policy) for backend, policy in policies.items()}

    @defer.inlineCallbacks
    def review(self, build: BuildRow):
        """The moves `build` makes, logged; a failure is logged and costs the history nothing (the next build of the
        backend counts again)."""
        policy = self.policies.get(build.backend)
        if policy is None:  # its file no longer loads
            return
        try:
            moves = yield relay_store(self.master).review_quarantine(build.buildid, policy)
        except Exception:
            log.err(None, f"crcr: while moving {build.backend}'s tests in or out of quarantine after build "
                          f"{build.buildid}")
            return
        for move in moves:
            log.msg(f"crcr: {build.backend}'s {move.suite} test {move.test} {move.move} of quarantine: {move.why}")


def review_recorded_build(master, build: BuildRow) -> defer.Deferred:
    """What the history recorder calls once it newly recorded `build`."""
    return master.service_manager.namedServices[QUARANTINE_SERVICE].review(build)
