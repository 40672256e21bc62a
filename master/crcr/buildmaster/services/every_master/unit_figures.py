"""Each unit's record over the last 7 days (docs/hardware-failures.md), one set of figures for the UI's Units page,
`crcr status --units` (www/units.py) and /metrics' unit gauges (RelayHealth.metrics): for each unit, by name,

    {"name", "workerid", "host", "device", "connected", "paused", "pause_reason", "builds", "infra_failures", "rate",
     "card", "last_failure": {"what", "at", "buildid", "build_url"} | null}

`workerid` is Buildbot's (its worker page: #/workers/<workerid>); `build_url` the failed build's page, null once
Buildbot no longer keeps it; `host` and `device` are the unit's as the relay's configuration declares it (null for a
worker it no longer declares). `builds` counts Buildbot's builds of the unit (of any builder: a fanned-out commit's
build stage, shared builds and suite children one each, where Health counts the backend's own builds, one per commit)
started in the window, `infra_failures` those of its runs that hit the hardware (a unit lost mid-build included),
`rate` the one over the other; `card` is what the unit named at its connection to this master (its info/card), else
what its last failure recorded; paused and why are Buildbot's (a unit the relay took out says so in its reason).
"""

from __future__ import annotations

from buildbot.data import resultspec
from twisted.internet import defer

from crcr.health.links import build_url
from crcr.names import CARD_INFO, DEVICE_PROPERTY, HOST_PROPERTY, RELAY_WORKER
from crcr.store.infra_failures import NO_RECORD
from crcr.store.service import relay_store

DAYS = 7


@defer.inlineCallbacks
def unit_figures(master):
    """Every unit's figures over the last DAYS days (the module's doc), by name; the relay's own worker is none."""
    since = int(master.reactor.seconds()) - DAYS * 86400
    records = yield relay_store(master).unit_records(master.db.model, since)
    workers = yield master.data.get(("workers",))
    pages = yield _build_pages(master, [r["last_failure"]["buildid"] for r in records.values() if r["last_failure"]])
    declared = master.workers.workers
    return [_unit_figures(worker, records.get(worker["name"], NO_RECORD), declared.get(worker["name"]), pages)
            for worker in sorted(workers, key=lambda w: w["name"]) if worker["name"] != RELAY_WORKER]


@defer.inlineCallbacks
def _build_pages(master, buildids: list[int]):
    """{buildid: its page in the UI} of the builds Buildbot still keeps: its UI finds a build by builder and number."""
    if not buildids:
        return {}
    builds = yield master.data.get(("builds",), filters=[resultspec.Filter("buildid", "in", buildids)])
    return {build["buildid"]: build_url(build["builderid"], build["number"]) for build in builds}


def _unit_figures(worker: dict, record: dict, declared, pages: dict[int, str]) -> dict:
    """`worker`: Buildbot's data of it; `declared`: its Worker in this master's configuration, or None."""
    def declared_as(name: str):
        return declared.properties.getProperty(name) if declared is not None else None

    last = record["last_failure"]
    connected_card = declared.info.getProperty(CARD_INFO) if declared is not None else None
    return {
        "name": worker["name"], "workerid": worker["workerid"],
        "host": declared_as(HOST_PROPERTY), "device": declared_as(DEVICE_PROPERTY),
        "connected": bool(worker["connected_to"]), "paused": worker["paused"], "pause_reason": worker["pause_reason"],
        **record, "card": connected_card.strip() if connected_card else record["card"],
        "rate": record["infra_failures"] / record["builds"] if record["builds"] else None,
        "last_failure": {**last, "build_url": pages.get(last["buildid"])} if last else None,
    }
