"""`crcr worker ...`: register, show, list and remove the hardware hosts that run builds."""

from __future__ import annotations

import argparse
import sys
import urllib.error
from pathlib import Path, PurePosixPath

from crcr.cli import hostsetup, registry
from crcr.config.errors import ConfigError
from crcr.cli.hostsetup import HostSetup
from crcr.config.loader import load_relay_config
from crcr.config.yamlfiles import display_path
from crcr.config.models import WorkerHost
from crcr.cli.relayapi import call
from crcr.config.secretfiles import secret_problem, worker_password
from crcr.config.settings import Settings, load_settings

DEFAULT_HOST_DIR = "/var/lib/crcr-worker"
DEFAULT_HOST_USER = "crcr"


def cmd_register(args) -> int:
    settings = load_settings()
    _check_setup_options(args)
    if args.rotate_password:
        host = registry.load_host(settings, args.name)
        _refuse_changes_on_rotation(args, host, settings)
        password = registry.new_password(settings, host.name)
        print(f"New password for worker host '{host.name}' in {_password_path(settings, host.name)}.")
        print("Reconfigure the master (crcr master reconfig --basedir DIR); then, on the host:\n")
        print(_setup(args, settings, host, password).rotation_instructions())
        return 0
    if args.device is None or args.admin is None:
        raise ConfigError("--device and --admin are required to register a new host")
    host = registry.host_from_options(args.name, registry.parse_devices(args.device), args.admin, args.max_builds)
    password = registry.register(settings, host)
    print(
        f"Registered worker host '{host.name}' ({_devices(host)}; {_slots(host)}) "
        f"in {display_path(registry.host_file(settings, host.name))}; its password is in "
        f"{_password_path(settings, host.name)} (never commit it)."
    )
    _warn_idle_devices(settings, host)
    print("Make the running master accept it, no restart needed: crcr master reconfig --basedir DIR\n")
    _print_setup(args, settings, host, password)
    return 0


def cmd_show(args) -> int:
    settings = load_settings()
    _check_setup_options(args)
    host = registry.load_host(settings, args.name)
    _print_setup(args, settings, host, registry.read_password(settings, host.name))
    return 0


def cmd_units(args) -> int:
    for unit in registry.load_host(load_settings(), args.name).units:
        print(unit.worker_name)
    return 0


def cmd_ensure_password(args) -> int:
    settings = load_settings()
    created = registry.ensure_password(settings, args.name)
    state = "created" if created else "kept"
    print(f"{state} the password of worker host '{args.name}' in {_password_path(settings, args.name)}")
    return 0


def cmd_remove(args) -> int:
    settings = load_settings()
    removed = registry.remove(settings, args.name)
    print(f"removed worker host '{args.name}': " + ", ".join(display_path(p) for p in removed))
    print("Reconfigure the master (crcr master reconfig --basedir DIR); its unit workers are then disconnected.")
    return 0


def cmd_list(args) -> int:
    settings = load_settings()
    relay = load_relay_config(settings)
    url = (args.url or settings.web_url).rstrip("/")
    connected = _connected_workers(url)
    rows = [("HOST", "DEVICES", "BUILDS", "CONNECTED", "ADMIN")]
    for host in relay.hosts:
        rows.append((host.name, _devices(host), str(host.build_slots), _connection(settings, host, connected), host.admin))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    if connected is None:
        print(f"(the master at {url} cannot be reached: connection state unknown)")
    return 0


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


def _slots(host: WorkerHost) -> str:
    return "1 build at a time" if host.build_slots == 1 else f"up to {host.build_slots} builds at once"


def _devices(host: WorkerHost) -> str:
    return ", ".join(f"{device}:{count}" for device, count in host.devices.items())


def _password_path(settings: Settings, name: str) -> str:
    return display_path(settings.secrets_dir / worker_password(name))


def _warn_idle_devices(settings: Settings, host: WorkerHost) -> None:
    used = {b.device for b in load_relay_config(settings).backends}
    idle = [d for d in host.devices if d not in used]
    if idle:
        print(f"note: no backend runs on {', '.join(idle)} yet; those units stay idle until one does", file=sys.stderr)


def _refuse_changes_on_rotation(args, host: WorkerHost, settings: Settings) -> None:
    """--rotate-password changes only the password; other options may repeat the file's values, not change them."""
    given = {
        "--device": registry.parse_devices(args.device) if args.device else None,
        "--admin": args.admin,
        "--max-builds": args.max_builds,
    }
    current = {"--device": dict(host.devices), "--admin": host.admin, "--max-builds": host.max_builds}
    changed = [option for option, value in given.items() if value is not None and value != current[option]]
    if changed:
        raise ConfigError(
            f"{', '.join(changed)}: --rotate-password changes only the password; edit "
            f"{display_path(registry.host_file(settings, host.name))} to change the host, then reconfigure the master"
        )


def _check_setup_options(args) -> None:
    """Refuse options the printed setup cannot carry safely, before anything is written."""
    hostsetup.check_host_dir(args.host_dir)
    hostsetup.check_host_user(args.host_user)


def _setup(args, settings: Settings, host: WorkerHost, password: str) -> HostSetup:
    return HostSetup(
        host=host,
        password=password,
        master_address=args.master or settings.worker_address,
        keepalive=settings.worker_keepalive,
        host_dir=PurePosixPath(args.host_dir),  # checked by _check_setup_options
        host_user=args.host_user,
    )


def _print_setup(args, settings: Settings, host: WorkerHost, password: str) -> None:
    setup = _setup(args, settings, host, password)
    unit_file = None
    if args.systemd_unit:
        Path(args.systemd_unit).write_text(setup.systemd_unit(), encoding="utf-8")
        unit_file = args.systemd_unit
    print(setup.instructions(unit_file=unit_file))


def add_worker_commands(sub: argparse._SubParsersAction) -> None:
    worker = sub.add_parser("worker", help="register, show, list and remove worker hosts")
    commands = worker.add_subparsers(dest="worker_command", required=True)

    setup_options = argparse.ArgumentParser(add_help=False)
    setup_options.add_argument("--master", metavar="HOST:PORT", help="where the host connects (default: settings)")
    setup_options.add_argument("--host-dir", default=DEFAULT_HOST_DIR, help="directory of the workers on the host")
    setup_options.add_argument("--host-user", default=DEFAULT_HOST_USER, help="account that runs builds on the host")
    setup_options.add_argument("--systemd-unit", metavar="FILE", help="also write the systemd unit to FILE")

    def host_command(name: str, func, help: str, parents=()) -> argparse.ArgumentParser:
        command = commands.add_parser(name, parents=list(parents), help=help)
        command.add_argument("name", metavar="NAME")
        command.set_defaults(func=func)
        return command

    register = host_command(
        "register", cmd_register, "declare a host, make its password, print its setup", [setup_options]
    )
    register.add_argument(
        "--device", action="append", metavar="DEVICE[:COUNT]", help="a device kind and its unit count (repeatable)"
    )
    register.add_argument("--admin", help='who runs the host, as "Name <email>"')
    register.add_argument("--max-builds", type=int, help="cap on builds at once (default: one per unit)")
    register.add_argument("--rotate-password", action="store_true", help="give a registered host a new password")
    host_command("show", cmd_show, "print a registered host's setup again", [setup_options])
    host_command("units", cmd_units, "print a host's unit worker names, one per line")
    host_command("ensure-password", cmd_ensure_password, "create a declared host's password if it has none")
    host_command("remove", cmd_remove, "delete a host's file and password")

    listing = commands.add_parser("list", help="every declared host, its devices, and whether it is connected")
    listing.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
    listing.set_defaults(func=cmd_list)
