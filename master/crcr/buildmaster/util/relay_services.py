"""The relay's services in buildmaster/, each reached through its accessor here, from any room (a step, a scheduler,
the web server, another service), never by name in Buildbot's service manager by hand (tests/test_layers.py): one
way, and a room below services/ reaches a service without importing it. Below buildmaster/ the store, the outboxes
and the upstream mirror have theirs beside them (store/service.py, github/commit_status.py,
pytorch_relay/sender.py, changes/upstream_mirror.py), and names.leads asks the leadership."""

from __future__ import annotations

from crcr.names import HEALTH_SERVICE, LEDGER_SERVICE, PRESENCE_SERVICE, PULL_REQUESTS_SERVICE, QUARANTINE_SERVICE


def _services(master) -> dict:
    return master.service_manager.namedServices


def commit_ledger(master):
    """The CommitLedger (services/leader/ledger.py)."""
    return _services(master)[LEDGER_SERVICE]


def device_presence(master):
    """The DevicePresence (services/every_master/presence.py); None on a master without it."""
    return _services(master).get(PRESENCE_SERVICE)


def relay_health(master):
    """The RelayHealth (services/every_master/health.py); None on a master without it."""
    return _services(master).get(HEALTH_SERVICE)


def pull_request_relay(master):
    """The PullRequestRelay (changes/pull_requests.py); None when no backend builds pull requests."""
    return _services(master).get(PULL_REQUESTS_SERVICE)


def quarantine_keeper(master):
    """The QuarantineKeeper (services/every_master/quarantine_keeper.py)."""
    return _services(master)[QUARANTINE_SERVICE]
