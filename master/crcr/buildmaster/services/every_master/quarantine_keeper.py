"""The backends' quarantines of flaky tests (store/quarantine.py) as each master knows them from its configuration:
each backend's `quarantine:` settings and suites. The leader's history recorder has it review each build it newly
records (the relay's own moves); the web server's quarantine endpoint (www/quarantine.py) has it make a maintainer's
move by hand, on any master."""

from __future__ import annotations

from buildbot.util import service
from twisted.internet import defer
from twisted.python import log

from crcr.names import QUARANTINE_SERVICE
from crcr.store.history import BuildRow
from crcr.store.quarantine import Move, Policy
from crcr.store.service import relay_store


def quarantine_backends(backends) -> dict[str, dict]:
    """What QuarantineKeeper takes of the backends (config.backend.Backend): {name: {"policy", "suites"}}."""
    return {b.name: {"policy": b.quarantine.model_dump(), "suites": [s.name for s in b.suites]} for b in backends}


class QuarantineKeeper(service.BuildbotService):
    name = QUARANTINE_SERVICE

    def checkConfig(self, backends: dict[str, dict]):
        pass

    def reconfigService(self, backends: dict[str, dict]):
        """`backends`: quarantine_backends(...) of every backend file loaded."""
        self.policies = {name: Policy(**backend["policy"]) for name, backend in backends.items()}
        self.suites = {name: tuple(backend["suites"]) for name, backend in backends.items()}

    @defer.inlineCallbacks
    def review(self, build: BuildRow):
        """The moves a newly recorded `build` makes, logged; a failure is logged and costs the history nothing (the
        next build of the backend counts again)."""
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
            log_move(move)

    @defer.inlineCallbacks
    def move_by_hand(self, move: Move):
        """A maintainer's move, made and logged; False when it changes nothing (the test is in already, or not)."""
        moved = yield relay_store(self.master).move_in_quarantine(move)
        if moved:
            log_move(move)
        return moved


def log_move(move: Move) -> None:
    way = "into" if move.move == "in" else "out of"
    log.msg(f"crcr: {move.backend}'s {move.suite} test {move.test} {way} quarantine by {move.who}: {move.why}")
