"""The mail telling a host's admin that a unit of theirs was taken out: Buildbot's reporters' generator, on the
leader alone, the unit's settings for it, the mail as an SMTP server receives it; and a unit resumed starting its
count of failures in a row again (docs/hardware-failures.md)."""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from types import SimpleNamespace

from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.reporters.unit_mail import UnitPausedGenerator, unit_mailers
from crcr.buildmaster.services.leader.units_out import UnitsResumed
from crcr.buildmaster.steps.taking_out import UNIT_PAUSED, pause_reason
from crcr.config.settings import load_settings
from crcr.names import LEADERSHIP_SERVICE
from crcr.store.service import RelayStore, relay_store
from relaymaster import leadership, relay_master
from smtp import smtp_server
from test_infra_failures import record_failure

PAUSED = {"name": "lab-spyre-2", "workerid": 7, "host": "lab", "admin": "Spyre Lab <lab@example.com>",
          "backend": "spyre", "card": "0000:3b:00.0 SN1234", "failure": "RAS::VFIO::DeviceOpenFail on lab-spyre-2",
          "reason": pause_reason(3, "RAS::VFIO::DeviceOpenFail on lab-spyre-2", "lab-spyre-2"),
          "log_url": "http://relay/#/builders/3/builds/12/steps/4/logs/infrastructure_failure"}


def master(leading: bool):
    return SimpleNamespace(service_manager=SimpleNamespace(
        namedServices={LEADERSHIP_SERVICE: SimpleNamespace(leading=leading)}))


def test_the_leader_mails_the_hosts_admin_naming_the_unit_its_card_what_it_hit_the_backend_and_the_log():
    report = UnitPausedGenerator().generate(master(True), None, UNIT_PAUSED, PAUSED)

    assert (report["users"], report["worker"]) == (["Spyre Lab <lab@example.com>"], "lab-spyre-2")
    assert report["subject"] == "crcr: unit lab-spyre-2 taken out (RAS::VFIO::DeviceOpenFail on lab-spyre-2)"
    body = report["body"].decode()
    assert body.startswith("The relay took unit lab-spyre-2 of host lab out: 3 infrastructure failures in a row, "
                           "the last RAS::VFIO::DeviceOpenFail on lab-spyre-2; after a look at its card: "
                           "crcr worker resume lab-spyre-2.")
    assert ("Card: 0000:3b:00.0 SN1234\nBackend: spyre\nThe log of the last build it failed: "
            "http://relay/#/builders/3/builds/12/steps/4/logs/infrastructure_failure") in body
    unidentified = UnitPausedGenerator().generate(master(True), None, UNIT_PAUSED, {**PAUSED, "card": None})
    assert "Card: not identified (no identify command for its device)\n" in unidentified["body"].decode()


def test_no_mail_from_another_master_nor_to_an_admin_without_an_address():
    assert UnitPausedGenerator().generate(master(False), None, UNIT_PAUSED, PAUSED) is None
    assert UnitPausedGenerator().generate(master(True), None, UNIT_PAUSED, {**PAUSED, "admin": "Spyre Lab"}) is None


def test_the_mail_goes_through_the_smtp_relay_the_settings_name_and_none_without_one():
    assert unit_mailers(load_settings(environ={})) == []
    (mailer,) = unit_mailers(load_settings(environ={"CRCR_SMTP_RELAY": "smtp.lab.example.com:2525",
                                                    "CRCR_MAIL_FROM": "relay@lab.example.com"}))
    given = mailer._config_kwargs  # what Buildbot configures the service with at its start
    assert (given["relayhost"], given["smtpPort"], given["fromaddr"]) == ("smtp.lab.example.com", 2525,
                                                                          "relay@lab.example.com")


class TakeOutMailTest(unittest.TestCase):
    """The mail as a real SMTP server receives it from Buildbot's MailNotifier, on the real reactor."""

    @defer.inlineCallbacks
    def mailed(self, message: dict):
        """The mails the SMTP server received once the leader heard of `message`: (envelope recipients, mail)."""
        with smtp_server() as (mailbox, smtp_relay):
            leader = yield fakemaster.make_master(self, wantMq=True, wantRealReactor=True)
            leader.service_manager = master(True).service_manager
            [mailer] = unit_mailers(load_settings(environ={"CRCR_SMTP_RELAY": smtp_relay,
                                                           "CRCR_MAIL_FROM": "relay@lab.example.com"}))
            yield mailer.setServiceParent(leader)
            yield leader.startService()
            self.addCleanup(leader.stopService)
            leader.mq.verifyMessages = False  # Buildbot's schemas know its own messages only
            leader.mq.callConsumer(UNIT_PAUSED, message)
            yield leader.mq.wait_consumed()
            return mailbox.received()

    @defer.inlineCallbacks
    def test_the_mail_carries_the_headers_a_mail_reader_expects_its_admin_in_to(self):
        [(envelope, mail)] = yield self.mailed(PAUSED)

        self.assertEqual((envelope, mail["To"], mail["From"]),
                         (["lab@example.com"], "Spyre Lab <lab@example.com>", "relay@lab.example.com"))
        self.assertIsNotNone(parsedate_to_datetime(mail["Date"]).tzinfo)
        self.assertRegex(mail["Message-ID"], r"^<[^@>]+@lab\.example\.com>$")

    @defer.inlineCallbacks
    def test_a_failure_line_with_control_characters_and_headers_is_mailed_as_text_of_one_subject_line(self):
        # A test's output, as the run's failure: a vertical tab, a form feed, CR LF and a line separator, each
        # followed by a header of its own.
        failure = ("E   AssertionError\vBcc: spy@evil.example\fX-Evil: 1\r\nTo: spy@evil.example"
                   "\u2028Cc: x@evil.example" + " padding" * 40)
        hostile = {**PAUSED, "failure": failure, "reason": pause_reason(3, failure, "lab-spyre-2"),
                   "admin": "Spyre Lab\v <lab@example.com>"}

        [(envelope, mail)] = yield self.mailed(hostile)

        self.assertEqual(envelope, ["lab@example.com"], "no one else")
        self.assertEqual([mail[name] for name in ("Bcc", "Cc", "X-Evil")], [None, None, None])
        self.assertEqual(mail["To"], "Spyre Lab <lab@example.com>")
        subject = str(mail["Subject"])
        self.assertTrue(subject.startswith("crcr: unit lab-spyre-2 taken out (E AssertionError Bcc: spy@evil.example "
                                           "X-Evil: 1 To: spy@evil.example Cc: x@evil.example padding padding"),
                        subject)
        self.assertLessEqual(len(subject), 200)
        self.assertEqual(mail.get_content_type(), "text/plain")
        self.assertIn("the last E   AssertionError\vBcc: spy@evil.example\fX-Evil: 1", mail.get_content(),
                      "the body says it whole, as text")


UNIT_ID = 7
NOW = 1_780_000_000


class ResumeTest(TestReactorMixin, unittest.TestCase):
    """A unit resumed after a look at its card starts its row of infrastructure failures again: the builds before the
    resume, which took it out, no longer count. Every master hears Buildbot's unpause; the leader records it in the
    relay's store, where every master's count reads it."""

    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        rows = [fakedb.Worker(id=UNIT_ID, name=PAUSED["name"]), fakedb.Builder(id=1, name="spyre"),
                fakedb.Buildset(id=1)]
        self.master = await relay_master(self, RelayStore(), leadership(), UnitsResumed(), prefix="crcr-resume-",
                                         rows=rows)
        await self.master.initLock.run(lambda: None)  # the leadership's first tick: this master leads
        self.store = relay_store(self.master)

    async def hit_the_card(self, buildid: int) -> None:
        """A build of the unit, started now, that hit the hardware."""
        self.reactor.advance(60)
        now = int(self.reactor.seconds())
        await self.master.db.insert_test_data([
            fakedb.BuildRequest(id=buildid, buildsetid=1, builderid=1),
            fakedb.Build(id=buildid, buildrequestid=buildid, builderid=1, workerid=UNIT_ID, started_at=now,
                         masterid=fakedb.FakeDBConnector.MASTER_ID)])
        await record_failure(self.store, PAUSED["name"], buildid, buildid, at=now)

    def taken_out(self) -> defer.Deferred:
        return self.store.failed_in_a_row(self.master.db.model, UNIT_ID, 3)

    async def resume(self) -> None:
        """Buildbot's unpause (the UI's button, `crcr worker resume`), as the router brings it to the master."""
        self.master.mq.verifyMessages = False  # Buildbot's schemas have no control messages
        self.master.mq.callConsumer(("control", "worker", str(UNIT_ID), "unpause"), {"reason": "resumed"})
        await self.master.mq.wait_consumed()

    async def test_a_unit_resumed_is_taken_out_again_only_after_as_many_failures_in_a_row_since(self):
        for buildid in (1, 2, 3):
            await self.hit_the_card(buildid)
        self.assertTrue(await self.taken_out())

        self.reactor.advance(600)  # its card looked at
        await self.resume()
        await self.hit_the_card(4)
        self.assertFalse(await self.taken_out(), "the builds before its resume do not count")
        self.assertTrue(await self.store.failed_in_a_row(self.master.db.model, UNIT_ID, 1))
        await self.hit_the_card(5)
        await self.hit_the_card(6)
        self.assertTrue(await self.taken_out(), "three in a row since its resume")

    async def test_a_master_that_does_not_lead_leaves_the_record_to_the_leader(self):
        for buildid in (1, 2, 3):
            await self.hit_the_card(buildid)
        await self.master.service_manager.namedServices[LEADERSHIP_SERVICE].disownServiceParent()  # it follows

        await self.resume()
        self.assertTrue(await self.taken_out(), "recorded by the leader alone")
