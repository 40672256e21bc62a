"""What the relay's masters must agree on lives in the database, not in one master's memory: why a build request
ended (the relay's reason, the person who cancelled it) and the collapses the queue policy approved. Two fake
masters on one SQLite file: what one notes, the other reads, as a master restarted on the same database does."""

from __future__ import annotations

from buildbot.process.results import CANCELLED, SUCCESS
from buildbot.test.reactor import TestReactorMixin
from twisted.trial import unittest

from crcr.buildmaster.schedulers.coalescing import note_approval
from crcr.github.check_run_text import check_run_fields
from crcr.github.formatting import FormatterWithEnding
from crcr.github.status_text import describe
from crcr.store.service import RelayStore
from relaymaster import another_relay_master, relay_master

SUPERSEDED = "Superseded by 1a2b3c4d5e"
OVERDUE = "Stopped by the relay: still running 10 min past the backend's 3 h timeout"


def cancelled(brid: int, queued: bool = False) -> dict:
    """A cancelled request as the build request generator passes it (queued), or a stopped build's."""
    if queued:
        return {"complete": True, "results": CANCELLED, "buildrequest": {"buildrequestid": brid}}
    return {"complete": True, "results": CANCELLED, "buildrequestid": brid, "steps": []}


class SharedStateTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(1_000_000)
        self.one = await relay_master(self, RelayStore(), prefix="crcr-one-")
        self.other = await another_relay_master(self, self.one, RelayStore(), prefix="crcr-other-")

    @staticmethod
    def store(master) -> RelayStore:
        return master.service_manager.namedServices["crcr-store"]

    async def status_text(self, master, build: dict) -> str:
        """The commit status's description the reporter of `master` writes for `build`."""
        return (await FormatterWithEnding(describe, "plain").format_message_for_build(master, build))["body"]

    async def test_why_the_relay_ended_a_request_on_one_master_is_what_the_other_reports(self):
        await self.store(self.one).note_end_reason(5, SUPERSEDED, self.reactor.seconds())  # its pull request service
        await self.store(self.one).note_end_reason(6, OVERDUE, self.reactor.seconds())  # its stale watch

        self.assertEqual(await self.status_text(self.other, cancelled(5, queued=True)), SUPERSEDED)
        self.assertEqual(await self.status_text(self.other, cancelled(6)), OVERDUE)
        fields = await FormatterWithEnding(check_run_fields, "json").format_message_for_build(self.other, cancelled(5))
        self.assertEqual((fields["body"]["conclusion"], fields["body"]["output"]["title"]), ("neutral", SUPERSEDED))

    async def test_who_cancelled_on_one_master_is_named_by_the_other(self):
        await self.store(self.one).note_canceller(5, "octocat", self.reactor.seconds())  # its web UI's Authz
        await self.store(self.other).note_canceller(5, "alice", self.reactor.seconds())  # a second stop, too late

        self.assertEqual(await self.status_text(self.other, cancelled(5)), "Cancelled by octocat")
        self.assertEqual(await self.status_text(self.one, cancelled(5)), "Cancelled by octocat")
        self.assertEqual(await self.status_text(self.other, cancelled(7)), "Cancelled", "nobody noted why")

    async def test_the_relays_reason_stands_before_a_persons_name_and_the_first_reason_stands(self):
        await self.store(self.one).note_canceller(5, "octocat", self.reactor.seconds())
        await self.store(self.other).note_end_reason(5, SUPERSEDED, self.reactor.seconds())
        await self.store(self.one).note_end_reason(5, "Closed", self.reactor.seconds())

        self.assertEqual(await self.status_text(self.one, cancelled(5)), SUPERSEDED)

    async def test_a_build_that_was_not_cancelled_says_what_it_did_whatever_was_noted(self):
        await self.store(self.one).note_end_reason(5, SUPERSEDED, self.reactor.seconds())
        built = {"complete": True, "results": SUCCESS, "buildrequestid": 5,
                 "steps": [{"name": "suite smoke", "results": SUCCESS}]}

        self.assertEqual(await self.status_text(self.other, built), "The only suite passed")

    async def test_a_restarted_store_reads_what_it_noted_before(self):
        await self.store(self.one).note_end_reason(5, SUPERSEDED, self.reactor.seconds())
        old = self.store(self.one)
        await old.disownServiceParent()
        await RelayStore().setServiceParent(self.one.service_manager)

        self.assertIsNot(self.store(self.one), old)
        self.assertEqual(await self.status_text(self.one, cancelled(5)), SUPERSEDED)

    async def test_a_collapse_approved_on_one_master_is_what_the_others_ledger_reads(self):
        """The master whose scheduler added the newer request runs Buildbot's collapser; the leader's ledger moves
        the old request's commits (buildmaster/services/leader/ledger.py)."""
        await note_approval(self.one, {"buildrequestid": 9}, {"buildrequestid": 8})

        self.assertEqual(await self.store(self.other).collapsed_into(8), 9)
        self.assertIsNone(await self.store(self.other).collapsed_into(9))
        await note_approval(self.other, {"buildrequestid": 10}, {"buildrequestid": 8})  # approved again, later
        self.assertEqual(await self.store(self.one).collapsed_into(8), 10)

    async def test_reasons_and_approvals_are_forgotten_after_a_month(self):
        await self.store(self.one).note_end_reason(5, SUPERSEDED, self.reactor.seconds())
        await note_approval(self.one, {"buildrequestid": 9}, {"buildrequestid": 8})
        self.reactor.advance(31 * 24 * 3600)

        await self.store(self.other).note_end_reason(6, OVERDUE, self.reactor.seconds())
        await note_approval(self.other, {"buildrequestid": 11}, {"buildrequestid": 10})

        self.assertIsNone(await self.store(self.other).ending_of(5))
        self.assertIsNone(await self.store(self.other).collapsed_into(8))
        self.assertEqual(await self.store(self.other).collapsed_into(10), 11)
