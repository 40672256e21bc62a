"""Build the BuildmasterConfig dictionary from settings, backends/ and workers/."""

from __future__ import annotations

from buildbot.config.errors import ConfigErrors
from twisted.python import log

from crcr.buildmaster.auth.secrets import SecretsDirectory
from crcr.buildmaster.changes.pull_requests import PullRequestRelay
from crcr.buildmaster.changes.upstream_mirror import UpstreamMirror
from crcr.buildmaster.changes.upstream_poller import upstream_poller
from crcr.buildmaster.process.builders import make_builders
from crcr.buildmaster.process.workers import make_workers, relay_workers
from crcr.buildmaster.reporters.pytorch_relay_jobs import pytorch_relay_reporters
from crcr.buildmaster.reporters.unit_mail import smtp_relay, unit_mailers
from crcr.buildmaster.schedulers.force import bisect_scheduler, force_scheduler
from crcr.buildmaster.schedulers.pull_requests import PullRequestScheduler
from crcr.buildmaster.schedulers.suites import triggerable
from crcr.buildmaster.schedulers.upstream import upstream_scheduler
from crcr.buildmaster.services.every_master.health import RelayHealth, health_backends
from crcr.buildmaster.services.every_master.leadership import RelayLeadership
from crcr.buildmaster.services.every_master.liveness import SilentWorkerWatch
from crcr.buildmaster.services.every_master.quarantine_keeper import QuarantineKeeper, quarantine_backends
from crcr.buildmaster.services.every_master.router_loss import ExitWithTheMaster
from crcr.buildmaster.services.every_master.waking import CrossMasterWaker
from crcr.buildmaster.services.leader.disabled_tests import DisabledTestsFollower
from crcr.buildmaster.services.leader.history_recorder import HistoryRecorder
from crcr.buildmaster.services.leader.janitor import RelayJanitor
from crcr.buildmaster.services.leader.ledger import CommitLedger
from crcr.buildmaster.services.leader.levels import LevelHistory
from crcr.buildmaster.services.leader.orphans import OrphanedChildren
from crcr.buildmaster.services.leader.readiness_watch import readiness_watches
from crcr.buildmaster.services.leader.stale import nothing_pending_services
from crcr.buildmaster.services.leader.units_out import UnitsResumed
from crcr.buildmaster.www import TITLE, upstream_project, www_config
from crcr.config.errors import ConfigError
from crcr.config.loader import load_checked_relay_config
from crcr.config.settings import Settings, load_settings
from crcr.config.upstream_web import commit_links, upstream_web_of
from crcr.github.issue_sender import issue_senders
from crcr.github.reporters import github_status_reporters
from crcr.plan.builds import plan_builders
from crcr.store.service import RelayStore


def build_master_config(settings: Settings | None = None, leave_out_invalid: bool = False) -> dict:
    """Raises Buildbot's ConfigErrors with our message, so the master refuses to start or reconfig.

    `leave_out_invalid` (at start): a backend or host file that does not validate is left out, named in the
    log and on the home page, so that one vendor's broken file does not take every other backend down.
    Otherwise (a reconfig) any broken file is refused and the running configuration stays in force."""
    try:
        settings = settings or load_settings()
        relay = load_checked_relay_config(settings, leave_out_invalid=leave_out_invalid)
    except ConfigError as e:
        raise ConfigErrors(str(e).splitlines()) from None
    for warning in relay.warnings:
        log.msg(f"crcr warning: {warning}")
    for problem in relay.left_out:
        log.msg(f"crcr: left out at start, does not validate: {problem}")

    active = relay.active_backends
    plan = plan_builders(relay)
    return {
        "title": TITLE,
        "titleURL": settings.web_url,
        "buildbotURL": settings.web_url,
        "protocols": {"pb": {"port": settings.worker_listen}},
        "db": {"db_url": settings.db_url},
        "secretsProviders": [SecretsDirectory(dirname=str(settings.secrets_dir))],
        "workers": [*make_workers(relay, settings.secrets_dir), *relay_workers(plan)],
        "change_source": [upstream_poller(settings)],
        "schedulers": [
            *(make(b, settings) for make in (upstream_scheduler, force_scheduler, bisect_scheduler) for b in active),
            *(PullRequestScheduler(b.name) for b in active if b.builds_pull_requests),
            *(triggerable(row) for row in plan if row.trigger),
        ],
        "builders": make_builders(relay, plan, settings),
        "services": [
            *github_status_reporters(relay, settings), *pytorch_relay_reporters(relay, settings),
            *issue_senders(relay, settings),
            *unit_mailers(settings), UnitsResumed(),
            SilentWorkerWatch(settings.worker_keepalive),
            UpstreamMirror(upstream_url=settings.upstream_url, branches=list(settings.upstream_branches)),
            RelayStore(), RelayLeadership(takeover_after=settings.takeover_after),
            CommitLedger(reporting=[b.name for b in active if b.reports_to_github], github_repo=settings.github_repo,
                         upstream_url=settings.upstream_url, web_url=settings.web_url),
            PullRequestRelay(backends=[(b.name, b.level, b.pr_label, tuple(b.trusted_associations))
                                       for b in active],
                             github_repo=settings.github_repo, github_api_url=settings.github_api_url,
                             upstream_url=settings.upstream_url),
            *nothing_pending_services(relay, plan, settings), CrossMasterWaker(), OrphanedChildren(),
            LevelHistory(levels={b.name: b.level for b in relay.backends}),
            DisabledTestsFollower(url=settings.disabled_tests_url, refresh=settings.disabled_tests_refresh),
            *readiness_watches(relay.backends, settings.web_url, smtp_relay(settings), settings.mail_from),
            QuarantineKeeper(backends=quarantine_backends(relay.backends)),
            HistoryRecorder(), RelayJanitor(history_days=settings.history_days, artifact_days=settings.artifact_days,
                                             artifact_store=settings.artifact_store),
            # Every backend, the inactive ones (no host offers their device) too: their maintainers look for them.
            RelayHealth(backends=health_backends(relay.backends), commit_url=upstream_web_of(settings).commit_url,
                        takeover_after=settings.takeover_after, not_loaded=relay.not_loaded),
            *([ExitWithTheMaster()] if settings.clustered else []),
        ],
        "www": www_config(settings, relay, plan),
        "projects": [upstream_project(settings)],
        "revlink": commit_links(settings),
        "buildbotNetUsageData": None,
        "collapseRequests": False,
        **cluster_config(settings),
    }


def cluster_config(settings: Settings) -> dict:
    """Buildbot's multi-master configuration: its message queue through the router, and multiMaster (which tells
    Buildbot that other masters build too). Alone, its in-process queue."""
    if not settings.clustered:
        return {}
    return {"mq": {"type": "wamp", "router_url": settings.mq_router_url, "realm": settings.mq_realm},
            "multiMaster": True}
