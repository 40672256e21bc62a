"""Builds reported to PyTorch's relay (backends with `report_to_pytorch`), through the outbox (sender.py):

- a build of a commit that relay dispatched to the backend (a pull request's head, a push's newest commit), or
  covering it (queue: newest), answers each dispatch not answered yet: `in_progress` when it starts, `completed` with
  its conclusion and test counts when it ends; a dispatch that came while the build ran gets both at its end
  (store/dispatches.py says which build answers which);
- a scheduled build (`schedule:`, RFC-0056) sends one `completed` self-report, `nightly` or `periodic`, the commit
  tested as its delivery id.

A build Buildbot retries (RETRY) sends no `completed`: its dispatches go to the next build of the commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot.reporters.base import ReporterBase
from buildbot.reporters.generators.build import BuildStartEndStatusGenerator
from buildbot.reporters.message import MessageFormatterFunction
from twisted.internet import defer

from crcr.config.loader import RelayConfig
from crcr.config.settings import Settings
from crcr.github.once import ReportedOnce
from crcr.names import force_scheduler_name, pull_request_scheduler_name, upstream_scheduler_name
from crcr.pytorch_relay.callbacks import (
    COMPLETED,
    IN_PROGRESS,
    dispatched_body,
    self_reported_body,
    started,
    workflow,
)
from crcr.pytorch_relay.sender import CALLBACK, PyTorchRelaySender, relay_sender
from crcr.store.service import relay_store


@dataclass(frozen=True)
class Reporting:
    """A backend reporting to PyTorch's relay, as its reports need it."""

    repo: str  # its repository: the one the token names
    follow: str | None  # its schedule's nightly or periodic; None when it follows every commit


def pytorch_relay_reporters(relay: RelayConfig, settings: Settings) -> list:
    """The reporter of the backends that report to PyTorch's relay, and the sender delivering what it writes."""
    reporting = {b.name: Reporting(b.repo, b.schedule.follow if b.schedule else None)
                 for b in relay.active_backends if b.report_to_pytorch}
    if not reporting:
        return []
    # Not a bisection's builds: they run a few tests, not the commit's suite.
    schedulers = [name(b) for b in reporting
                  for name in (upstream_scheduler_name, force_scheduler_name, pull_request_scheduler_name)]
    return [
        PyTorchRelayCallbacks(reporting=reporting, github_repo=settings.github_repo,
                              generators=callback_generators(list(reporting), schedulers)),
        PyTorchRelaySender(callback_url=settings.pytorch_relay_url, token_command=settings.pytorch_relay_token_command,
                           retry_delay=settings.outbox_retry_delay, max_delay=settings.outbox_max_delay),
    ]


def callback_generators(builders: list[str] | None, schedulers: list[str] | None) -> list:
    """Each start and end of a build of `builders` asked for by `schedulers`: its callbacks.workflow as the body."""
    fields = MessageFormatterFunction(workflow, "json")
    return [BuildStartEndStatusGenerator(builders=builders, schedulers=schedulers, start_formatter=fields,
                                         end_formatter=fields)]


class PyTorchRelayCallbacks(ReportedOnce, ReporterBase):
    name = "crcr-pytorch-relay-callbacks"

    def checkConfig(self, reporting, github_repo, generators):
        super().checkConfig(generators=generators)

    @defer.inlineCallbacks
    def reconfigService(self, reporting, github_repo, generators):
        self.reporting, self.github_repo = reporting, github_repo
        yield super().reconfigService(generators=generators)

    @defer.inlineCallbacks
    def sendMessage(self, reports):
        build = reports[0]["builds"][0]
        fields = reports[0]["body"]  # callbacks.workflow's
        backend = build["builder"]["name"]  # builders are named after their backend (buildmaster/process/builders.py)
        store = relay_store(self.master)
        if fields is None:  # retried: the next build answers its dispatches
            yield store.release_dispatches(build["buildid"])
            return
        sha = build["buildset"]["sourcestamps"][0]["revision"]
        covered = yield store.commits_of_request(build["buildrequestid"])  # the ledger's: queue: newest
        shas = [sha, *(c.sha for c in covered if c.sha != sha)]
        earlier = [] if fields["status"] == IN_PROGRESS else (yield store.answered_dispatches(build["buildid"]))
        dispatches = yield store.answer_dispatches(backend, shas, build["buildid"])
        bodies = []
        for d in dispatches:
            if fields["status"] == COMPLETED and d not in earlier:  # came while the build ran
                bodies.append(dispatched_body(d.event_type, d.delivery_id, d.payload, started(fields)))
            bodies.append(dispatched_body(d.event_type, d.delivery_id, d.payload, fields))
        reporting = self.reporting[backend]
        scheduler = (build.get("properties") or {}).get("scheduler", [None])[0]
        if fields["status"] == COMPLETED and reporting.follow and scheduler == upstream_scheduler_name(backend):
            bodies.append(self_reported_body(reporting.follow, self.github_repo, sha, fields))
        sender = relay_sender(self.master)
        for body in bodies:
            yield sender.enqueue(CALLBACK, reporting.repo, sha, body["delivery_id"], body, brid=build["buildid"])
