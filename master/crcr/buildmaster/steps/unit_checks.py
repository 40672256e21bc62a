"""What a build does on a unit before anything else, from its device's file (workers/devices/<device>.yaml,
docs/hardware-failures.md): the device's health check, which takes out a unit failing it before it wastes the
build (RETRY: Buildbot builds it again, on a unit not paused); and its identify command, whose output names the
card in the build's CARD_PROPERTY, recorded with each failure of the build's runs."""

from __future__ import annotations

from buildbot.plugins import steps, util
from buildbot.process.results import RETRY, SUCCESS
from buildbot.reporters.utils import getURLForBuild
from buildbot.util import identifiers
from twisted.internet import defer

from crcr.buildmaster.steps.infra import InfraSetup
from crcr.buildmaster.steps.taking_out import health_check_reason, take_out
from crcr.names import (
    ADMIN_PROPERTY,
    CARD_INFO,
    CARD_PROPERTY,
    DEVICE_INDEX_PROPERTY,
    DEVICE_PROPERTY,
    HOST_PROPERTY,
)
from crcr.store.service import relay_store
from crcr.store.tables.coordination import infra_failures

HEALTH_CHECK_STEP, IDENTIFY_STEP = "health check", "identify card"
# What the device's commands see: which of the host's units the build holds.
DEVICE_ENV = {"CRCR_DEVICE_INDEX": util.Interpolate(f"%(prop:{DEVICE_INDEX_PROPERTY})s")}


CARD_LENGTH = infra_failures.c.card.type.length  # as much of a card's identity as the store keeps


def card_of(build) -> str | None:
    """What identified the card of the build's unit: the build's identify step, else the unit's info/card, which the
    host tool wrote when it set the unit up and the unit sent at its connection."""
    said = build.getProperty(CARD_PROPERTY) or build.getWorkerInfo().getProperty(CARD_INFO) or ""
    return said.strip()[:CARD_LENGTH] or None


def record_hardware_failure(build, backend: str, kind: str, what: str, lines: list[str]):
    """A run of `build` that hit the hardware, recorded against its unit and card (store/infra_failures.py)."""
    return relay_store(build.master).record_infra_failure(
        at=int(build.master.reactor.seconds()), unit=build.getProperty("workername"),
        host=build.getProperty(HOST_PROPERTY) or "", device=build.getProperty(DEVICE_PROPERTY) or "",
        card=card_of(build), backend=backend,
        sha=build.getProperty("got_revision") or build.getProperty("revision") or "", buildid=build.buildid,
        brid=build.requests[0].id, kind=kind, what=what, lines=lines)


def unit_facts(step, backend: str) -> dict:
    """The unit a step runs on, as taking_out.take_out names it."""
    return {"name": step.getProperty("workername"), "workerid": step.build.workerforbuilder.worker.workerid,
            "host": step.getProperty(HOST_PROPERTY) or "", "admin": step.getProperty(ADMIN_PROPERTY),
            "backend": backend, "card": card_of(step.build)}


@defer.inlineCallbacks
def build_url(step):
    return getURLForBuild(step.master, (yield step.build.getBuilderId()), step.build.number)


@defer.inlineCallbacks
def log_url(step, name: str):
    """The UI's page of the step's log `name`, the only one of that name in its step: Buildbot routes a log by its
    slug, which its addLog makes so."""
    return f"{(yield build_url(step))}/steps/{step.number}/logs/{identifiers.forceIdentifier(50, name)}"


class HealthCheck(steps.ShellCommand):
    """The device's health check: passed, the build goes on; failed, the unit is taken out and the build ends
    RETRY, to be made on another unit."""

    def __init__(self, backend: str, **kwargs):
        self.backend = backend
        super().__init__(**kwargs)

    @defer.inlineCallbacks
    def run(self):
        cmd = yield self.makeRemoteShellCommand()
        yield self.runCommand(cmd)
        if not cmd.didFail():
            return SUCCESS
        unit = unit_facts(self, self.backend)
        said = f"exit code {cmd.rc}"
        yield take_out(self.master, unit, health_check_reason(unit["name"], said),
                       f"its health check failed on {unit['name']}", (yield log_url(self, "stdio")))
        self.descriptionDone = [f"failed ({said}): {unit['name']} taken out; built again on another unit"]
        return RETRY


def device_steps(infra: InfraSetup | None) -> list:
    """The device's checks before a build on a unit: its health check, then its identify command."""
    if infra is None:
        return []
    found = []
    if infra.health_check:
        found.append(HealthCheck(infra.backend, name=HEALTH_CHECK_STEP, command=infra.health_check, env=DEVICE_ENV,
                                 haltOnFailure=True))
    if infra.identify:
        found.append(steps.SetPropertyFromCommand(
            name=IDENTIFY_STEP, command=infra.identify, property=CARD_PROPERTY, env=DEVICE_ENV,
            flunkOnFailure=False, warnOnFailure=True))
    return found
