"""GET /plugins/crcr/api/units and `crcr status --units` (docs/hardware-failures.md): each unit's builds and runs
that hit the hardware over 7 days, its card, paused and why; under Buildbot's harness, a fake master with a real
SQLite database and the relay's store."""

from __future__ import annotations

import json
from types import SimpleNamespace

from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.cli.status import units_lines
from crcr.names import RELAY_WORKER
from crcr.store.service import RelayStore
from relaymaster import relay_master, relay_plugin, render
from test_infra_failures import RAS, record_failure

DAY = 86400
NOW = 1_800_000_000
BUILDER = 10


def build(buildid: int, workerid: int, started_at: int) -> list:
    return [fakedb.Buildset(id=buildid), fakedb.BuildRequest(id=buildid, buildsetid=buildid, builderid=BUILDER),
            fakedb.Build(id=buildid, buildrequestid=buildid, builderid=BUILDER, workerid=workerid,
                         masterid=fakedb.FakeDBConnector.MASTER_ID, started_at=started_at)]


class UnitsResourceTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        self.store = RelayStore()
        self.master = await relay_master(self, self.store, prefix="crcr-units-", rows=[
            fakedb.Builder(id=BUILDER, name="spyre"),
            fakedb.Worker(id=1, name="lab-spyre-0"),
            fakedb.Worker(id=2, name="lab-spyre-1", paused=1, pause_reason="3 infrastructure failures in a row"),
            fakedb.Worker(id=3, name=RELAY_WORKER),
            fakedb.ConnectedWorker(id=1, masterid=fakedb.FakeDBConnector.MASTER_ID, workerid=1),
            *build(1, 1, NOW - 3600), *build(2, 1, NOW - 7200), *build(3, 2, NOW - 60),
            *build(4, 2, NOW - 8 * DAY),  # before the window
        ])
        self.master.www = SimpleNamespace(assertUserAllowed=lambda *args: defer.succeed(None))
        self.app = relay_plugin(self.master, [{"name": "spyre"}])
        for buildid, unit, at in ((3, "lab-spyre-1", NOW - 50), (4, "lab-spyre-1", NOW - 8 * DAY)):
            await record_failure(self.store, unit, buildid, buildid, at=at, card="0000:3b:00.0 SN-7")

    @defer.inlineCallbacks
    def test_each_unit_says_its_builds_and_hardware_failures_of_the_week_its_card_and_why_it_is_paused(self):
        request, body = yield render(self.app.resource, "/api/units")
        answer = json.loads(body)

        self.assertEqual(request.responseCode, 200)
        self.assertEqual(answer, {"days": 7, "units": [
            {"name": "lab-spyre-0", "connected": True, "paused": False, "pause_reason": None, "builds": 2,
             "infra_failures": 0, "rate": 0.0, "card": None, "last_failure": None},
            {"name": "lab-spyre-1", "connected": False, "paused": True,
             "pause_reason": "3 infrastructure failures in a row", "builds": 1, "infra_failures": 1, "rate": 1.0,
             "card": "0000:3b:00.0 SN-7", "last_failure": {"what": RAS, "at": NOW - 50, "buildid": 3}},
        ]}, "the relay's own worker is no unit; a failure before the window is not counted")
        self.assertEqual(units_lines(answer)[2:], [
            f"{'lab-spyre-0':30}  {'connected':12}  {2:>6}  {0:>11}  {'0%':>5}  {'-':20}  -",
            f"{'lab-spyre-1':30}  {'paused':12}  {1:>6}  {1:>11}  {'100%':>5}  {'0000:3b:00.0 SN-7':20}  {RAS}",
            "lab-spyre-1 is paused: 3 infrastructure failures in a row",
        ])
