"""The mail to a backend's maintainers when PyTorch's HUD would demote it (services/leader/readiness_watch.py): the
leader looks as it starts and hourly on the master's (fake) clock, at the figures RelayHealth gives from the relay's
store on a real SQLite database, and mails once per at-risk episode; a real SMTP server (tests/smtp.py) receives it."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

from buildbot.test.reactor import TestReactorMixin
from twisted.internet import reactor as real_reactor
from twisted.internet.task import deferLater
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.services.every_master.health import RelayHealth
from crcr.buildmaster.services.leader.readiness_watch import ReadinessWatch, readiness_watches
from crcr.config.loader import load_checked_relay_config
from crcr.store.relay_jobs import JobRow
from crcr.store.service import RelayStore, relay_store
from relaymaster import leadership, relay_master
from smtp import smtp_server

NOW = 2_000_000_000
MINUTE, HOUR, DAY = 60, 3600, 86400
BACKEND = "spyre"
MAINTAINERS = ["Spyre CI <spyre-ci@example.com>", "lead@example.com"]
WEB_URL = "http://relay.example.com/"
WAIT = 10  # seconds of real time the SMTP server has to receive a mail


class ReadinessWatchTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        server = smtp_server()
        self.mailbox, address = server.__enter__()
        self.addCleanup(server.__exit__, None, None, None)
        host, port = address.rsplit(":", 1)
        self.smtp_relay = (host, int(port))
        health = RelayHealth(backends=[{"name": BACKEND, "level": "L3", "device": "spyre", "description": "Spyre"}],
                             commit_url=None, takeover_after=75)
        self.master = await relay_master(self, RelayStore(), leadership(), health, prefix="crcr-readiness-")
        await self.master.initLock.run(lambda: None)  # the leadership's first tick: this master leads
        self.store = relay_store(self.master)
        await self.store.record_level(BACKEND, "L3", NOW - 60 * DAY)
        self.run_id = 0

    async def jobs(self, first: int, last: int, queue: int) -> None:
        """A job queued every 3 hours from `first` to before `last`, waiting `queue`, passing in an hour."""
        for queued in range(first, last, 3 * HOUR):
            self.run_id += 1
            await self.store.finish_relay_job(JobRow(BACKEND, f"{self.run_id:040x}", "push", self.run_id,
                                                     "spyre / unit", 1, self.run_id, queued, queued + queue,
                                                     queued + queue + HOUR, "success"))

    async def start_watch(self) -> None:
        """The watch starting on the leader, as at a master's start."""
        watch = ReadinessWatch(mail_to={BACKEND: MAINTAINERS}, web_url=WEB_URL, smtp_relay=self.smtp_relay,
                               mail_from="relay@lab.example.com")
        await watch.setServiceParent(self.master.service_manager)

    async def received(self, count: int) -> list:
        """The mails received once there are `count` (waiting up to WAIT seconds of real time for them)."""
        deadline = time.monotonic() + WAIT
        while len(self.mailbox.received()) < count and time.monotonic() < deadline:
            await deferLater(real_reactor, 0.05, lambda: None)
        return self.mailbox.received()

    async def an_hour_later(self) -> None:
        self.reactor.advance(HOUR)
        await self.received(0)  # what the look sent reaches the server (nothing, if it sent nothing)

    async def test_a_backend_at_risk_is_mailed_once_at_start_with_the_criterion_its_window_and_its_page(self):
        await self.jobs(NOW - 20 * DAY, NOW - 5 * DAY, queue=10 * MINUTE)
        await self.jobs(NOW - 5 * DAY, NOW, queue=50 * MINUTE)  # 7 days: 38.6 min on average

        await self.start_watch()

        [(envelope, mail)] = await self.received(1)
        assert envelope == ["spyre-ci@example.com", "lead@example.com"]
        assert mail["To"] == "Spyre CI <spyre-ci@example.com>, lead@example.com"
        assert mail["From"] == "relay@lab.example.com"
        assert parsedate_to_datetime(mail["Date"]).timestamp() == NOW
        assert mail["Message-ID"].endswith("@lab.example.com>")
        assert mail["Subject"] == ("crcr: spyre at risk of L3 demotion: average queue 38 min > 30 min "
                                   "(7-day window)")
        body = mail.get_content().replace("\r\n", "\n")  # as the SMTP server received it
        assert body.startswith("PyTorch's HUD would demote spyre from L3: over its demotion window (the last 7 "
                               "days), by the jobs crcr reported to PyTorch's relay, this criterion fails:\n\n"
                               "  average queue 38 min > 30 min (7-day window)\n"
                               "    average queue: 38 min, target < 30 min, over the last 7 days\n")
        assert f"Every criterion beside its target: {WEB_URL}#/health/spyre\n" in body

        await self.an_hour_later()
        await self.an_hour_later()
        assert len(self.mailbox.received()) == 1, "one mail per episode"

    async def test_a_backend_clear_once_is_mailed_again_in_its_next_episode(self):
        await self.jobs(NOW - 7 * DAY, NOW, queue=50 * MINUTE)
        await self.start_watch()
        await self.received(1)

        # A week of short queues later the backend is clear; the next day's long ones put it at risk again.
        self.reactor.advance(7 * DAY - HOUR)
        await self.jobs(NOW, NOW + 7 * DAY, queue=5 * MINUTE)
        await self.an_hour_later()
        assert len(self.mailbox.received()) == 1
        await self.jobs(NOW + 7 * DAY, NOW + 9 * DAY, queue=2 * HOUR)
        self.reactor.advance(2 * DAY - HOUR)
        await self.an_hour_later()

        mails = await self.received(2)
        assert len(mails) == 2
        assert mails[1][1]["Subject"].startswith("crcr: spyre at risk of L3 demotion: average queue ")

    async def test_a_backend_within_its_targets_gets_no_mail(self):
        await self.jobs(NOW - 7 * DAY, NOW, queue=10 * MINUTE)

        await self.start_watch()
        await self.an_hour_later()

        assert self.mailbox.received() == []


def test_the_watch_is_configured_with_an_smtp_relay_for_the_backends_whose_files_give_addresses(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "alpha", level="L3", device="npu", mail=MAINTAINERS)
    write_backend(dirs.backends, "beta", level="L2", device="npu")
    write_worker(dirs.workers, "host", devices={"npu": 1})
    write_worker_password(dirs.secrets, "host")
    relay = load_checked_relay_config(settings_for(dirs))

    assert readiness_watches(relay.backends, WEB_URL, None, "relay@lab.example.com") == []
    [watch] = readiness_watches(relay.backends, WEB_URL, ("smtp.lab.example.com", 25), "relay@lab.example.com")
    assert watch._config_kwargs["mail_to"] == {"alpha": MAINTAINERS}
