"""PyTorch's disabled tests, followed (docs/backends.md, "Tests upstream disabled"): the leader asks for test-infra's
condensed list every `disabled_tests_refresh` seconds, as it takes the lead (a master's start) and at a reconfig,
with a conditional request (If-None-Match, If-Modified-Since: 304 keeps the list), and keeps it in the relay's table,
the one list every master and every suite's step reads (store/disabled_tests.py). An answer that is no list, an
error or an unreachable host keeps the last good list and records the problem, logged once per change of it, not at
every ask. An empty URL follows nothing: the list kept is forgotten, and no test is skipped for it."""

from __future__ import annotations

import treq
from buildbot.util import service
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.util.leader_duty import PeriodicDuty
from crcr.store.disabled_tests import KeptList
from crcr.store.service import relay_store
from crcr.suites.disabled_upstream import UnreadableList, as_rows, from_rows, parse_condensed

DISABLED_TESTS_SERVICE = "crcr-disabled-tests"
FETCH_TIMEOUT = 60  # seconds for the host's answer to begin
NONE_KEPT = "[]"


class DisabledTestsFollower(PeriodicDuty, service.BuildbotService):
    name = DISABLED_TESTS_SERVICE
    what = "following PyTorch's disabled tests"

    def checkConfig(self, url: str, refresh: int):
        pass

    @defer.inlineCallbacks
    def reconfigService(self, url: str, refresh: int):
        changed = (getattr(self, "url", None), getattr(self, "period", None)) != (url, refresh)
        self.url, self.period = url, refresh
        if changed:  # asked again at once, then at the new pace
            yield self.restart_duty()

    def duty(self):
        return self.refresh_list()

    @defer.inlineCallbacks
    def refresh_list(self):
        """The list asked for once, kept with what came of it."""
        store = relay_store(self.master)
        kept = yield store.disabled_tests_kept()
        if not self.url:
            if kept is not None:
                yield store.forget_disabled_tests()
                log.msg("crcr: PyTorch's disabled tests are no longer followed (disabled_tests_url is empty)")
            return
        if kept is not None and kept.url != self.url:
            kept = None  # another list: nothing of the old one's holds
        now = int(self.master.reactor.seconds())
        fresh = yield self._fetch(kept, now)
        if kept is None or kept.problem != fresh.problem:
            log.msg(f"crcr: PyTorch's disabled tests at {self.url}: "
                    + (fresh.problem or f"read, {len(from_rows(fresh.entries))} entries"))
        yield store.keep_disabled_tests(fresh)

    @defer.inlineCallbacks
    def _fetch(self, kept: KeptList | None, now: int):
        """The list to keep after one conditional request: the answer's, or the last good one with the problem."""
        last = kept or KeptList(self.url, None, None, None, None, NONE_KEPT, None)
        headers = {"User-Agent": "crcr"}
        if last.etag:
            headers["If-None-Match"] = last.etag
        if last.last_modified:
            headers["If-Modified-Since"] = last.last_modified
        try:
            # A connection per ask: one every half hour has nothing to keep alive.
            response = yield treq.get(self.url, headers=headers, timeout=FETCH_TIMEOUT, persistent=False)
            body = yield treq.content(response)
        except Exception as e:  # unreachable, refused, timed out: the host's trouble, the list stays
            return _kept_with(last, now, f"unreachable: {e.__class__.__name__}: {e}")
        if response.code == 304 and kept is not None:
            return _kept_with(last, now, None)
        if response.code != 200:
            return _kept_with(last, now, f"HTTP {response.code}: the last good list stays")
        try:
            entries, bad = parse_condensed(body)
        except UnreadableList as e:
            return _kept_with(last, now, f"{e}: the last good list stays")
        return KeptList(self.url, response.headers.getRawHeaders("ETag", [None])[-1],
                        response.headers.getRawHeaders("Last-Modified", [None])[-1], now, now, as_rows(entries),
                        "; ".join(bad) or None)


def _kept_with(last: KeptList, now: int, problem: str | None) -> KeptList:
    return KeptList(last.url, last.etag, last.last_modified, last.fetched_at, now, last.entries, problem)
