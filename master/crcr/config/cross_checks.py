"""Checks between the files, which no one model can make: unit worker names two hosts would share, devices no host
offers, suites on more units than any host has, and `uses` naming no shared build."""

from __future__ import annotations

from pathlib import Path

from crcr.config.backend import Backend
from crcr.config.builds import SharedBuild
from crcr.config.errors import did_you_mean
from crcr.config.paths import display_path
from crcr.config.settings import Settings
from crcr.config.workers import WorkerHost


def unit_name_clashes(workers: list[WorkerHost]) -> list[tuple[str, str, str]]:
    """(unit worker name, first host, second host) of each name two hosts would share: names join
    host, device and index with '-', and host and device names may contain '-'."""
    owner: dict[str, str] = {}
    clashes = []
    for host in workers:
        for unit in host.units:
            first = owner.setdefault(unit.worker_name, host.name)
            if first != host.name:
                clashes.append((unit.worker_name, first, host.name))
    return clashes


def unit_name_errors(workers: list[WorkerHost], workers_dir: Path) -> dict[str, str]:
    """{later host: its clashes}; each clash is the later host's problem."""
    errors: dict[str, list[str]] = {}
    for name, first, second in unit_name_clashes(workers):
        errors.setdefault(second, []).append(
            f"{display_path(workers_dir / (second + '.yaml'))}: devices: the unit worker name '{name}' is also "
            f"one of {display_path(workers_dir / (first + '.yaml'))}'s; rename one of the hosts"
        )
    return {host: "\n".join(lines) for host, lines in errors.items()}


def needed_devices(backend: Backend, shared_builds: dict[str, SharedBuild]) -> list[tuple[str, str]]:
    """(what needs it, device) for every device the backend's builds run on: its own, its build stage's, its shared
    builds'."""
    return [("device", backend.device), *([("build: device", backend.build_device)] if backend.build else []),
            *((f"uses: {name}", shared_builds[name].device) for name in backend.uses)]


def missing_devices(backend: Backend, shared_builds: dict[str, SharedBuild], offered: set[str],
                     where: str) -> list[str]:
    """The warning of a backend needing a device no host offers (needed_devices)."""
    needs: dict[str, list[str]] = {}
    for what, device in needed_devices(backend, shared_builds):
        if device not in offered:
            needs.setdefault(device, []).append(what)
    if not needs:
        return []
    inactive = "the backend stays inactive (no builder) until"

    def named(device: str) -> str:  # a typo of an offered device is more likely than a device no host has yet
        return f"'{device}'{did_you_mean(device, offered)}"
    if len(needs) == 1 and len(what_of := next(iter(needs.values()))) == 1:
        return [f"{where}: {what_of[0]}: no worker offers {named(next(iter(needs)))}; {inactive} a host with it is "
                "registered"]
    listed = ", ".join(f"{named(device)} ({', '.join(whats)})" for device, whats in needs.items())
    return [f"{where}: no worker offers {listed}; {inactive} hosts with them are registered"]


def _widest_hosts(hosts: list[WorkerHost]) -> dict[str, tuple[str, int]]:
    """{device: (the first host with the most units of it, how many)}: a build on several units takes them on one
    host. In one pass over the hosts, not one per backend (backends x hosts at each reconfig)."""
    widest: dict[str, tuple[str, int]] = {}
    for host in hosts:
        for device, units in host.devices.items():
            if units > widest.get(device, ("", 0))[1]:
                widest[device] = (host.name, units)
    return widest


def too_wide_suites(backends: list[Backend], hosts: list[WorkerHost], settings: Settings) -> dict[str, str]:
    """{backend: its suites on more units than any host of its device has}: their children could never start. A
    backend whose device no host offers is inactive instead (missing_devices)."""
    refused = {}
    widest_hosts = _widest_hosts(hosts)
    for backend in backends:
        host, most = widest_hosts.get(backend.device, (None, 0))
        wider = [suite for suite in backend.suites if suite.units > most]
        if host is not None and wider:
            where = display_path(settings.backends_dir / (backend.name + ".yaml"))
            widest = display_path(settings.workers_dir / (host + ".yaml"))
            refused[backend.name] = "\n".join(
                f"{where}: suite {suite.name}: units: {suite.units}, and no host has {suite.units} '{backend.device}' "
                f"units (the most: {most}, {widest}); its child builds, which take their units on one host, would "
                "never start" for suite in wider)
    return refused


def unknown_shared_builds(backends: list[Backend], shared_builds: dict[str, SharedBuild], backends_dir: Path,
                          shared_dir: Path, shared_errors: dict[str, str]) -> dict[str, str]:
    """{backend: its `uses` naming no shared build}; a shared build file that is itself invalid counts as none."""
    refused = {}
    known = ", ".join(sorted(shared_builds)) or "none"
    for backend in backends:
        unknown = [name for name in backend.uses if name not in shared_builds]
        if unknown:
            invalid = " (its file is invalid: see above)" if shared_errors else ""
            refused[backend.name] = (
                f"{display_path(backends_dir / (backend.name + '.yaml'))}: uses: "
                f"{', '.join(repr(n) for n in unknown)} is no shared build{invalid}; "
                f"{display_path(shared_dir)}/ holds: {known}")
    return refused
