"""The leader following PyTorch's disabled tests (services/leader/disabled_tests.py): it asks the stand-in host
(tests/disabled_tests_host.py, answering as raw.githubusercontent.com does) as it starts and every refresh on the
master's fake clock, with conditional requests, and keeps the list in the relay's store on a real SQLite database;
an outage or a body that is no list keeps the last good list with the problem, logged once. And the stand-in itself."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from buildbot.test.reactor import TestReactorMixin
from twisted.internet import reactor as real_reactor
from twisted.internet.task import deferLater
from twisted.python import log
from twisted.trial import unittest

from crcr.buildmaster.services.leader.disabled_tests import DisabledTestsFollower
from crcr.store.service import RelayStore, relay_store
from crcr.suites.disabled_upstream import from_rows
from disabled_tests_host import PATH, Asked, DisabledTestsHost, condensed_entry
from relaymaster import leadership, relay_master

NOW = 2_000_000_000
REFRESH = 1800
WAIT = 10  # seconds of real time an ask has to reach the stand-in and be kept
LISTED = {"test_add (__main__.TestOps)": condensed_entry(1), "test_mul (__main__.TestOps)": condensed_entry(2, ["rocm"])}


class DisabledTestsFollowerTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        self.host = DisabledTestsHost(LISTED).__enter__()
        self.addCleanup(self.host.__exit__, None, None, None)
        self.master = await relay_master(self, RelayStore(), leadership(), prefix="crcr-disabled-")
        await self.master.initLock.run(lambda: None)  # the leadership's first tick: this master leads
        self.store = relay_store(self.master)
        self.logged: list[str] = []
        observer = lambda event: self.logged.append(" ".join(map(str, event.get("message", ()))))  # noqa: E731
        log.addObserver(observer)
        self.addCleanup(log.removeObserver, observer)

    async def start(self, url: str | None = None) -> DisabledTestsFollower:
        follower = DisabledTestsFollower(url=self.host.url if url is None else url, refresh=REFRESH)
        await follower.setServiceParent(self.master.service_manager)
        return follower

    async def kept_after(self, asks: int):
        """The list kept once the host was asked `asks` times and the last answer kept (real time, a deadline)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            kept = await self.store.disabled_tests_kept()
            if len(self.host.asked()) >= asks and kept is not None and kept.checked_at == self.reactor.seconds():
                return kept
            await deferLater(real_reactor, 0.05, lambda: None)
        raise AssertionError(f"the host was asked {len(self.host.asked())} times, {asks} expected, and kept")

    async def later(self, asks: int):
        self.reactor.advance(REFRESH)
        return await self.kept_after(asks)

    def mentions(self, text: str) -> int:
        return sum(text in line for line in self.logged)

    async def test_the_list_is_fetched_at_start_then_asked_again_conditionally_and_kept_on_304(self):
        await self.start()
        first = await self.kept_after(1)
        assert [(e.key, e.issue, e.platforms) for e in from_rows(first.entries)] == [
            ("test_add (__main__.TestOps)", "1", ()), ("test_mul (__main__.TestOps)", "2", ("rocm",))]
        assert (first.url, first.fetched_at, first.problem) == (self.host.url, NOW, None)

        second = await self.later(2)
        assert self.host.asked() == [Asked(None, None, 200), Asked(first.etag, None, 304)]
        assert (second.entries, second.fetched_at, second.checked_at) == (first.entries, NOW, NOW + REFRESH)

        self.host.serve({"test_add (__main__.TestOps)": condensed_entry(1)})  # issue 2 closed
        third = await self.later(3)
        assert [e.issue for e in from_rows(third.entries)] == ["1"]
        assert third.fetched_at == NOW + 2 * REFRESH

    async def test_an_outage_or_a_body_that_is_no_list_keeps_the_last_good_list_and_is_logged_once(self):
        await self.start()
        good = await self.kept_after(1)

        self.host.failing = 502
        kept = await self.later(2)
        assert (kept.entries, kept.problem) == (good.entries, "HTTP 502: the last good list stays")
        await self.later(3)
        assert self.mentions("HTTP 502") == 1

        self.host.failing = None
        self.host.serve_text(b"<html>429 Too Many Requests</html>")
        kept = await self.later(4)
        assert (kept.entries, kept.problem) == (
            good.entries, "not JSON: Expecting value: line 1 column 1 (char 0): the last good list stays")

        self.host.serve(LISTED)
        kept = await self.later(5)
        assert (kept.entries, kept.problem) == (good.entries, None)
        assert self.mentions("read, 2 entries") == 2  # at the first fetch, and once well again

    async def test_an_unreachable_host_is_a_problem_and_an_empty_url_follows_nothing(self):
        follower = await self.start("http://127.0.0.1:9/list.json")  # the discard port: refused
        deadline = time.monotonic() + WAIT
        while (kept := await self.store.disabled_tests_kept()) is None and time.monotonic() < deadline:
            await deferLater(real_reactor, 0.05, lambda: None)
        assert kept.entries == "[]" and kept.problem.startswith("unreachable: ConnectionRefusedError")

        await follower.reconfigServiceWithSibling(DisabledTestsFollower(url="", refresh=REFRESH))
        deadline = time.monotonic() + WAIT
        while await self.store.disabled_tests_kept() is not None and time.monotonic() < deadline:
            await deferLater(real_reactor, 0.05, lambda: None)
        assert await self.store.disabled_tests_kept() is None


def get(url: str, etag: str | None = None) -> tuple[int, str | None, bytes]:
    request = urllib.request.Request(url, headers={"If-None-Match": etag} if etag else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers["ETag"], answer.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["ETag"], e.read()


def test_the_stand_in_answers_as_the_real_host_does():
    with DisabledTestsHost(LISTED) as host:
        status, etag, body = get(host.url)
        assert (status, body.startswith(b"{")) == (200, True)
        assert get(host.url, etag) == (304, etag, b"")
        host.serve({})
        status, changed, body = get(host.url, etag)
        assert (status, body, changed != etag) == (200, b"{}", True)
        host.failing = 503
        assert get(host.url, changed)[0] == 503
        assert get(host.url.replace(PATH, "/other.json"))[0] == 404
        assert [asked.answered for asked in host.asked()] == [200, 304, 200, 503, 404]
        assert host.asked()[1].if_none_match == etag
