"""The table of declared worker hosts and how many of their units the running master has connected.

Shown by `crcr worker list` and `crcr master status`; the connections are asked of the master's REST API."""

from __future__ import annotations

import urllib.error

from crcr.cli.relayapi import call
from crcr.config.loader import load_relay_config
from crcr.config.secretfiles import secret_problem, worker_password
from crcr.config.settings import Settings
from crcr.config.workers import WorkerHost


def devices_text(host: WorkerHost) -> str:
    return ", ".join(f"{device}:{count}" for device, count in host.devices.items())


def print_hosts_table(settings: Settings, url: str) -> None:
    """One row per host of workers/*.yaml; the web address `url` is the master's, to ask for its connections."""
    url = url.rstrip("/")
    connected = _connected_workers(url)
    rows = [("HOST", "DEVICES", "BUILDS", "CONNECTED", "ADMIN")]
    for host in load_relay_config(settings).hosts:
        rows.append(
            (host.name, devices_text(host), str(host.build_slots), _connection(settings, host, connected), host.admin)
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    if connected is None:
        print(f"(the master at {url} cannot be reached: connection state unknown)")


def _connected_workers(url: str) -> set[str] | None:
    """Names of the unit workers connected to the running master; None when it cannot be asked."""
    try:
        workers = call(f"{url}/api/v2/workers")["workers"]
    except (urllib.error.URLError, OSError, KeyError):
        return None
    return {w["name"] for w in workers if w["connected_to"]}


def _connection(settings: Settings, host: WorkerHost, connected: set[str] | None) -> str:
    problem = secret_problem(settings.secrets_dir, worker_password(host.name))
    if problem is not None:
        return f"cannot log in: password file {problem}"
    if connected is None:
        return "?"
    units = [u.worker_name for u in host.units]
    missing = [name for name in units if name not in connected]
    summary = f"{len(units) - len(missing)} of {len(units)}"
    return summary + (f" (not connected: {', '.join(missing)})" if missing and len(missing) < len(units) else "")
