"""`crcr worker ...`: register, show, list and remove the hardware hosts that run builds."""

from __future__ import annotations

import argparse
import shlex
import sys

from crcr.cli import hostsetup, mastercontrol, registry
from crcr.cli.hoststable import devices_text, print_hosts_table
from crcr.cli.relayapi import RelaySession, add_sign_in_options, credentials_from, error_message, not_on_relay
from crcr.cli.subcommands import add_command
from crcr.cli.workersetup import check_setup_options, host_up, print_setup, setup_by_hand, setup_options
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config
from crcr.config.paths import display_path
from crcr.config.secretfiles import worker_password
from crcr.config.settings import Settings, load_settings
from crcr.config.workers import BUILD_ENV_WORKER, WorkerHost
from crcr.names import RELAY_WORKER
from crcr.shipped import crcr_host


def cmd_register(args) -> int:
    settings = load_settings()
    check_setup_options(args)
    if args.rotate_password:
        host = registry.load_host(settings, args.name)
        _refuse_changes_on_rotation(args, host, settings)
        password = registry.new_password(settings, host.name)
        print(f"New password for worker host '{host.name}' in {_password_path(settings, host.name)}.")
        print(f"Reconfigure the master: {_reconfig_command(settings)}; then, on the host:\n")
        if args.by_hand:
            print(setup_by_hand(args, settings, host, password).rotation_instructions())
        else:
            print(host_up(args, settings, host, password).instructions())  # it re-keys the units
        return 0
    if args.device is None or args.admin is None:
        raise ConfigError("--device and --admin are required to register a new host")
    host = registry.host_from_options(args.name, registry.parse_devices(args.device), args.admin, args.max_builds,
                                      args.maintainer or [], args.build_env or BUILD_ENV_WORKER)
    password = registry.register(settings, host, new_devices=args.new_device)
    print(
        f"Registered worker host '{host.name}' ({devices_text(host)}; {_slots(host)}) "
        f"in {display_path(registry.host_file(settings, host.name))}; its password is in "
        f"{_password_path(settings, host.name)} (never commit it)."
    )
    _warn_idle_devices(settings, host)
    print(f"Make the running master accept it, no restart needed: {_reconfig_command(settings)}\n")
    print_setup(args, settings, host, password)
    return 0


def cmd_show(args) -> int:
    settings = load_settings()
    check_setup_options(args)
    host = registry.load_host(settings, args.name)
    print_setup(args, settings, host, registry.read_password(settings, host.name))
    return 0


def cmd_units(args) -> int:
    for unit in registry.load_host(load_settings(), args.name).units:
        print(unit.worker_name)
    return 0


def cmd_unit_environment(args) -> int:
    hostsetup.check_host_dir(args.venv, "--venv")
    for name, value in crcr_host.trial_unit_environment(args.venv).items():
        print(f"{name}={value}")
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
    print(f"Reconfigure the master, which then disconnects the host's unit workers: {_reconfig_command(settings)}")
    return 0


def cmd_resume(args) -> int:
    """Buildbot's unpause of a unit the relay took out (or anyone paused), as the UI's button does; a unit not
    paused is left alone (a resume starts its count of failures in a row again)."""
    relay = RelaySession((args.url or load_settings().web_url).rstrip("/"), credentials_from(args))
    try:
        listed = relay.call("workers")
        if "workers" not in listed:
            raise RuntimeError(f"the relay at {relay.url} did not list its units: {error_message(listed)}")
        units = {worker["name"]: worker for worker in listed["workers"] if worker["name"] != RELAY_WORKER}
        if args.unit not in units:
            raise RuntimeError(not_on_relay("unit", args.unit, relay.url, units))
        unit = units[args.unit]
        if not unit["paused"]:
            print(f"{args.unit} was not paused; nothing changed")
            return 0
        reply = relay.call(f"workers/{unit['workerid']}", {"jsonrpc": "2.0", "id": 1, "method": "unpause",
                                                          "params": {"reason": "resumed with crcr worker resume"}})
    except OSError as e:
        raise RuntimeError(f"cannot reach the relay at {relay.url}: {getattr(e, 'reason', e)}") from None
    if "error" in reply:
        raise RuntimeError(error_message(reply))
    print(f"{args.unit} resumed" + (f" (it was paused: {unit['pause_reason']})" if unit.get("pause_reason") else ""))
    return 0


def cmd_list(args) -> int:
    settings = load_settings()
    print_hosts_table(settings, args.url or settings.web_url)
    return 0


def _reconfig_command(settings: Settings) -> str:
    """The reconfig command with the folder of the running master that reads these host files, when exactly one
    runs here."""
    basedirs = mastercontrol.running_basedirs(settings.workers_dir)
    if len(basedirs) == 1:
        return f"crcr master reconfig --basedir {shlex.quote(display_path(basedirs[0]))}"
    return ("crcr master reconfig --basedir DIR (the folder given to crcr master start; the demo's is "
            ".state/demo/master)")


def _slots(host: WorkerHost) -> str:
    return "1 build at a time" if host.build_slots == 1 else f"up to {host.build_slots} builds at once"


def _password_path(settings: Settings, name: str) -> str:
    return display_path(settings.secrets_dir / worker_password(name))


def _warn_idle_devices(settings: Settings, host: WorkerHost) -> None:
    idle = registry.devices_without_backend(load_relay_config(settings), host)
    if idle:
        print(f"note: no backend runs on {', '.join(idle)} yet; those units stay idle until one does", file=sys.stderr)


def _refuse_changes_on_rotation(args, host: WorkerHost, settings: Settings) -> None:
    """--rotate-password changes only the password; other options may repeat the file's values, not change them."""
    given = {
        "--device": registry.parse_devices(args.device) if args.device else None,
        "--admin": args.admin,
        "--max-builds": args.max_builds,
        "--maintainer": [login.lstrip("@") for login in args.maintainer] if args.maintainer else None,
        "--build-env": args.build_env,
    }
    current = {"--device": dict(host.devices), "--admin": host.admin, "--max-builds": host.max_builds,
               "--maintainer": list(host.maintainers), "--build-env": host.build_env}
    changed = [option for option, value in given.items() if value is not None and value != current[option]]
    if changed:
        raise ConfigError(
            f"{', '.join(changed)}: --rotate-password changes only the password; edit "
            f"{display_path(registry.host_file(settings, host.name))} to change the host, then reconfigure the master"
        )


def add_worker_commands(sub: argparse._SubParsersAction) -> None:
    worker = sub.add_parser(
        "worker", help="register, show, list and remove worker hosts",
        description="Declare the hardware hosts that run builds (workers/<NAME>.yaml and their passwords), and "
        "print what their admins run on them. The running master takes changes on `crcr master reconfig`.",
    )
    commands = worker.add_subparsers(dest="worker_command", required=True, metavar="COMMAND")
    shown_setup = setup_options()

    def host_command(name: str, func, summary: str, description: str | None = None, parents=()):
        command = add_command(commands, name, func, summary, description, parents)
        command.add_argument("name", metavar="NAME", help="the host's name: letters, digits, '-' and '_'")
        return command

    register = host_command(
        "register", cmd_register, "declare a host, make its password, print its setup",
        "Declare a host (workers/NAME.yaml) with a new random password, and print what its admin runs on it: "
        "fetch crcr's host tool from the relay and run its one `up` command (--by-hand: the commands it runs). "
        "With --rotate-password: a new password for a registered host, and the same command, which re-keys it.",
        [shown_setup],
    )
    register.add_argument(
        "--device", action="append", metavar="DEVICE[:COUNT]", help="a device kind and its unit count (repeatable)"
    )
    register.add_argument(
        "--new-device", action="store_true",
        help="accept a --device no backend runs on yet (without it such a device is refused: a typo would make a "
             "host whose units stay idle)",
    )
    register.add_argument("--admin", help='who runs the host, as "Name <email>"')
    register.add_argument("--maintainer", action="append", metavar="LOGIN",
                          help="a GitHub login (or the relay's user name) who may pause, stop and kill the host's "
                               "units (repeatable)")
    register.add_argument("--max-builds", type=int, help="cap on builds at once (default: one per unit)")
    register.add_argument(
        "--build-env", metavar=f"{BUILD_ENV_WORKER}|VENV",
        help=f"the Python environment builds run in on the host: '{BUILD_ENV_WORKER}', the worker's own venv (the "
             "host tool installs pytest in it; the default), or the absolute path of a venv of the lab's",
    )
    register.add_argument("--rotate-password", action="store_true", help="give a registered host a new password")
    host_command("show", cmd_show, "print a registered host's setup again", parents=[shown_setup])
    host_command("units", cmd_units, "print a host's unit worker names, one per line (for scripts)")
    host_command("ensure-password", cmd_ensure_password,
                 "create a declared host's password if it has none (for scripts)")
    unit_environment = add_command(
        commands, "unit-environment", cmd_unit_environment,
        "print the environment a trial host's units get, one NAME=VALUE a line (for scripts)",
        "Print the environment the host tool gives the units of a host attached as oneself (a trial), and so their "
        "builds: nothing of the caller's. `make demo` starts its own units with it.")
    unit_environment.add_argument("--venv", required=True, metavar="DIR",
                                  help="the venv whose commands the builds run, first on PATH (absolute)")
    host_command("remove", cmd_remove, "delete a host's file and password",
                 "Delete workers/NAME.yaml and the host's password; `crcr master reconfig` then disconnects its units.")

    resume = add_command(
        commands, "resume", cmd_resume, "put back a unit taken out (paused) after failures of its hardware",
        "Resume a unit the relay paused after its builds hit the hardware several times in a row (its reason on "
        "its page in the UI), once its card was looked at: Buildbot's unpause, as the worker page's button. For "
        "the relay's admins and the host's maintainers.",
    )
    resume.add_argument("unit", metavar="UNIT", help="the unit's worker name, <host>-<device>-<index>")
    resume.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
    add_sign_in_options(resume)

    listing = add_command(
        commands, "list", cmd_list, "every declared host, its devices, and how many of its units are connected",
        "List every declared host, its devices and build slots, and how many of its units the running master has "
        "connected (asked of its REST API; '?' when it cannot be reached).",
    )
    listing.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
