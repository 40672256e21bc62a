"""Drop worker connections that have gone silent, so their builds are retried instead of hanging."""

from __future__ import annotations

import time

from buildbot.util import service
from buildbot.worker.local import LocalWorker
from twisted.internet import defer, task
from twisted.python import log

from crcr.config.limits import MISSED_KEEPALIVES


class SilentWorkerWatch(service.BuildbotService):
    """Buildbot only notices a vanished host through TCP, which takes hours on Linux defaults when the
    host loses power or network; a frozen host is never noticed. Workers send a keepalive every
    `keepalive` seconds (`create-worker --keepalive`), and every message counts, so a connection silent
    for MISSED_KEEPALIVES intervals is closed: Buildbot then marks its build RETRY and requeues it."""

    name = "crcr-silent-worker-watch"
    _loop: task.LoopingCall | None = None

    def checkConfig(self, keepalive: int):
        if keepalive <= 0:
            raise ValueError("keepalive must be positive")

    def reconfigService(self, keepalive: int):
        self.keepalive = keepalive
        if self._loop is not None and self._loop.running:
            self._loop.stop()
            self._loop.start(keepalive, now=False)

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()  # configures the service: sets self.keepalive
        # When the watch first saw each connection: one that has not spoken yet is silent since then.
        self._first_seen: dict[int, float] = {}
        self._loop = task.LoopingCall(self.check)
        self._loop.clock = self.master.reactor
        self._loop.start(self.keepalive, now=False)

    def stopService(self):
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        return super().stopService()

    def check(self):
        now = time.time()
        limit = MISSED_KEEPALIVES * self.keepalive
        seen = {}
        for worker in self.master.workers.workers.values():
            conn = worker.conn
            # The relay's own worker (fanned-out parents wait there) is in this process: it sends no keepalive and
            # has no network to lose.
            if conn is None or isinstance(worker, LocalWorker):
                continue
            seen[id(conn)] = self._first_seen.get(id(conn), now)
            silent_for = now - max(worker.lastMessageReceived, seen[id(conn)])
            if silent_for > limit:
                log.msg(f"crcr: worker {worker.name} silent for {silent_for:.0f}s (limit {limit}s); disconnecting it")
                worker.disconnect().addErrback(log.err, f"crcr: while disconnecting silent worker {worker.name}")
        self._first_seen = seen
