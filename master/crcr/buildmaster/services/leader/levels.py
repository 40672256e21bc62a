"""The backends' level history (store/levels.py): PyTorch's HUD promotes a backend to L3 after 30 days at L2, which
no file says. The leader records each backend's configured `level:` whenever it differs from the last one recorded:
as it takes the lead (a master's start) and at each reconfig; a backend first seen is recorded from then on."""

from __future__ import annotations

from buildbot.util import service
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.util.leader_duty import LeaderDuty
from crcr.store.service import relay_store

LEVELS_SERVICE = "crcr-level-history"


class LevelHistory(LeaderDuty, service.BuildbotService):
    name = LEVELS_SERVICE

    def checkConfig(self, levels: dict[str, str]):
        pass

    @defer.inlineCallbacks
    def reconfigService(self, levels: dict[str, str]):
        """`levels`: {backend: its configured level} of every backend file loaded."""
        self.levels = dict(levels)
        if self.running and self.leads():
            yield self.record()

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        yield self.start_duty()

    def lead(self):
        return self.record()

    @defer.inlineCallbacks
    def record(self):
        """Each backend's level, where it changed; a failure is logged (the next start, lead or reconfig tries
        again), never stops the master."""
        now = int(self.master.reactor.seconds())
        try:
            for backend, level in sorted(self.levels.items()):
                if (yield relay_store(self.master).record_level(backend, level, now)):
                    log.msg(f"crcr: backend {backend} recorded at {level} from now on (its level history)")
        except Exception:
            log.err(None, "crcr: while recording the backends' levels")
