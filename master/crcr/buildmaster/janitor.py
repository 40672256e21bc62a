"""The relay's janitor: one nightly builder, visible in the UI and forceable by admins, that deletes what is
older than the `history_days` setting: Buildbot's build logs (its JanitorConfigurator's step) and the relay's own
rows (PruneHistory): the test history, the ledger's decided commits and the ended bisections with their steps.

Buildbot's janitor keeps its builds' own rows (builds, steps, properties): the relay's history tables are what
the health pages read.
"""

from __future__ import annotations

from datetime import timedelta

from buildbot.configurators.janitor import JANITOR_NAME, JanitorConfigurator
from buildbot.process.buildstep import BuildStep
from buildbot.process.results import SUCCESS
from twisted.internet import defer

from crcr.buildmaster.force_forms import OwnBuildersForceScheduler
from crcr.store.service import relay_store

DAY = 24 * 3600
JANITOR_FORCE_NAME = JANITOR_NAME + "_force"  # as JanitorConfigurator names its force scheduler
# The summary's names of the tables a reader cares about; the log lists every table.
SUMMARY = (("crcr_builds", "build"), ("crcr_commits", "commit"), ("crcr_bisections", "bisection"))


class PruneHistory(BuildStep):
    name = "RelayHistoryJanitor"  # as Buildbot names the janitor's steps (LogChunksJanitor)

    def __init__(self, history_days: int, **kwargs):
        super().__init__(**kwargs)
        self.history_days = history_days

    @defer.inlineCallbacks
    def run(self):
        store = relay_store(self.master)
        counts = yield store.prune_history(self.master.reactor.seconds() - self.history_days * DAY)
        yield self.addCompleteLog("pruned", f"Rows older than {self.history_days} days deleted from the relay's tables:\n"
                                  + "".join(f"  {table}: {n}\n" for table, n in sorted(counts.items())))
        pruned = [f"{counts[table]} {noun}{'s' * (counts[table] != 1)}" for table, noun in SUMMARY if counts[table]]
        self.descriptionDone = [f"pruned {', '.join(pruned) or 'nothing'} older than {self.history_days} days"]
        return SUCCESS


class RelayJanitor(JanitorConfigurator):
    """Buildbot's janitor builder (build logs past the horizon, nightly at midnight, and its force scheduler),
    with PruneHistory added to its steps, and a force form that, as the relay's others, acts on its own builder
    only."""

    def __init__(self, history_days: int):
        super().__init__(logHorizon=timedelta(days=history_days))
        self.history_days = history_days

    def configure(self, config_dict):
        super().configure(config_dict)
        (builder,) = [b for b in config_dict["builders"] if b.name == JANITOR_NAME]
        builder.factory.addStep(PruneHistory(history_days=self.history_days))
        schedulers = config_dict["schedulers"]
        (force,) = [i for i, s in enumerate(schedulers) if s.name == JANITOR_FORCE_NAME]
        schedulers[force] = OwnBuildersForceScheduler(name=JANITOR_FORCE_NAME, builderNames=[JANITOR_NAME])
