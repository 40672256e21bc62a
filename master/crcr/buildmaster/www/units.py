"""Each unit's record over the last 7 days, as JSON for `crcr status --units` (docs/hardware-failures.md):

    GET /plugins/crcr/api/units
    {"days": 7, "units": [{"name", "connected", "paused", "pause_reason", "builds", "infra_failures", "rate",
                           "card", "last_failure": {"what", "at", "buildid"} | null}]}, by name

`builds` counts Buildbot's builds of the unit (of any builder) started in the window, `infra_failures` those of its
runs that hit the hardware, `rate` the one over the other; `card` is what the device's identify command said in its
last failure; paused and why are Buildbot's (a unit the relay took out says so in its reason).
"""

from __future__ import annotations

from twisted.internet import defer

from crcr.buildmaster.www.bisections import JsonResource
from crcr.names import RELAY_WORKER

DAYS = 7


class UnitsResource(JsonResource):
    @defer.inlineCallbacks
    def answer(self, request):
        since = int(self.master.reactor.seconds()) - DAYS * 86400
        records = yield self.store().unit_records(self.master.db.model, since)
        workers = yield self.master.data.get(("workers",))
        units = []
        for worker in sorted(workers, key=lambda w: w["name"]):
            if worker["name"] == RELAY_WORKER:
                continue
            record = records.get(worker["name"], {"builds": 0, "infra_failures": 0, "card": None,
                                                  "last_failure": None})
            units.append({
                "name": worker["name"], "connected": bool(worker["connected_to"]), "paused": worker["paused"],
                "pause_reason": worker["pause_reason"], **record,
                "rate": record["infra_failures"] / record["builds"] if record["builds"] else None,
            })
        return {"days": DAYS, "units": units}
