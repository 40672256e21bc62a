"""GET /plugins/crcr/api/units, `crcr status --units` and /metrics' unit gauges (docs/hardware-failures.md): each
unit's builds and runs that hit the hardware over 7 days, its card, paused and why, its host and device; under
Buildbot's harness, a fake master with a real SQLite database, the relay's store and health service, and the unit
workers its configuration declares."""

from __future__ import annotations

import json
from types import SimpleNamespace

from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.process.workers import HostUnitWorker
from crcr.buildmaster.services.every_master.health import RelayHealth
from crcr.cli.status import units_lines
from crcr.names import CARD_INFO, DEVICE_PROPERTY, HOST_PROPERTY, RELAY_WORKER
from crcr.store.service import RelayStore
from relaymaster import relay_master, relay_plugin, render, www_root
from test_infra_failures import RAS, record_failure

DAY = 86400
NOW = 1_800_000_000
BUILDER = 10


def build(buildid: int, workerid: int, started_at: int) -> list:
    return [fakedb.Buildset(id=buildid), fakedb.BuildRequest(id=buildid, buildsetid=buildid, builderid=BUILDER),
            fakedb.Build(id=buildid, buildrequestid=buildid, builderid=BUILDER, workerid=workerid,
                         masterid=fakedb.FakeDBConnector.MASTER_ID, started_at=started_at)]


def declared_unit(name: str, host: str, device: str) -> HostUnitWorker:
    """The unit's worker as the relay's configuration makes it (process/workers.py's make_workers)."""
    return HostUnitWorker(name, "pw", host=host, host_slots=None, properties={HOST_PROPERTY: host,
                                                                             DEVICE_PROPERTY: device})


class UnitsResourceTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        self.store = RelayStore()
        health = RelayHealth(backends=[], commit_url="", takeover_after=75)
        self.master = await relay_master(self, self.store, health, prefix="crcr-units-", rows=[
            fakedb.Builder(id=BUILDER, name="spyre"),
            fakedb.Worker(id=1, name="lab-spyre-0"),
            fakedb.Worker(id=2, name="lab-spyre-1", paused=1, pause_reason="3 infrastructure failures in a row"),
            fakedb.Worker(id=3, name=RELAY_WORKER),
            fakedb.Worker(id=4, name="old-spyre-0"),  # a unit the configuration no longer declares
            fakedb.ConnectedWorker(id=1, masterid=fakedb.FakeDBConnector.MASTER_ID, workerid=1),
            *build(1, 1, NOW - 3600), *build(2, 1, NOW - 7200), *build(3, 2, NOW - 60),
            *build(4, 2, NOW - 8 * DAY),  # before the window
        ])
        for name in ("lab-spyre-0", "lab-spyre-1"):
            self.master.workers.workers[name] = declared_unit(name, "lab", "spyre")
        # What lab-spyre-0 named at its connection (its info/card, as the host tool wrote it).
        self.master.workers.workers["lab-spyre-0"].info.setProperty(CARD_INFO, "0000:5e:00.0 SN-9\n", "Worker")
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
            {"name": "lab-spyre-0", "workerid": 1, "host": "lab", "device": "spyre", "connected": True,
             "paused": False, "pause_reason": None, "builds": 2, "infra_failures": 0, "rate": 0.0,
             "card": "0000:5e:00.0 SN-9", "last_failure": None},
            {"name": "lab-spyre-1", "workerid": 2, "host": "lab", "device": "spyre", "connected": False,
             "paused": True, "pause_reason": "3 infrastructure failures in a row", "builds": 1, "infra_failures": 1,
             "rate": 1.0, "card": "0000:3b:00.0 SN-7", "last_failure": {"what": RAS, "at": NOW - 50, "buildid": 3,
                                                       "build_url": f"#/builders/{BUILDER}/builds/3"}},
            {"name": "old-spyre-0", "workerid": 4, "host": None, "device": None, "connected": False,
             "paused": False, "pause_reason": None, "builds": 0, "infra_failures": 0, "rate": None, "card": None,
             "last_failure": None},
        ]}, "the relay's own worker is no unit; a failure before the window is not counted; a worker no longer "
            "declared has no host nor device")
        # What BUILDS RUN counts is said: every build the unit ran, a fanned-out commit's parts one each, unlike the
        # Health page's builds (a commit's build once).
        self.assertEqual(units_lines(answer), [
            "Units over the last 7 days. BUILDS RUN: every build the unit ran, of any backend and kind (a fanned-out "
            "commit's build stage, shared builds and suite children one each, where Health counts its build once); "
            "HW FAILURES: those of them that hit the hardware:",
            f"{'UNIT':30}  {'STATE':12}  BUILDS RUN  HW FAILURES  {'RATE':>5}  {'CARD':20}  LAST FAILURE",
            f"{'lab-spyre-0':30}  {'connected':12}  {2:>10}  {0:>11}  {'0%':>5}  {'0000:5e:00.0 SN-9':20}  -",
            f"{'lab-spyre-1':30}  {'paused':12}  {1:>10}  {1:>11}  {'100%':>5}  {'0000:3b:00.0 SN-7':20}  {RAS}",
            f"{'old-spyre-0':30}  {'disconnected':12}  {0:>10}  {0:>11}  {'-':>5}  {'-':20}  -",
            "lab-spyre-1 is paused: 3 infrastructure failures in a row",
        ])

    @defer.inlineCallbacks
    def test_metrics_give_each_unit_the_same_figures(self):
        _, body = yield render(self.app.resource, "/api/units")
        _, text = yield render(www_root(), "/metrics")
        gauges = {(s.name, s.labels["unit"]): s.value for family in text_string_to_metric_families(text.decode())
                  for s in family.samples if family.name.startswith("crcr_unit_")}

        self.assertEqual(gauges, {
            (f"crcr_unit_{figure}", unit["name"]): int(unit[figure])
            for unit in json.loads(body)["units"] for figure in ("builds", "infra_failures", "paused", "connected")})
        self.assertEqual(gauges[("crcr_unit_infra_failures", "lab-spyre-1")], 1)
