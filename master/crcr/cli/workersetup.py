"""The setup `crcr worker register` and `show` print a host's admin: the options that shape it (where the workers
live, which account runs builds, --by-hand), checked before anything is written, then the host tool's one `up`
command (cli/hostup.py) or, --by-hand, the commands it runs (cli/hostsetup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path, PurePosixPath

from crcr.cli import hostsetup
from crcr.cli.hostsetup import DEFAULT_HOST_DIR, DEFAULT_HOST_USER, DEFAULT_PASSWORD_FILE, HostSetup
from crcr.cli.hostup import HostUp, compiler_caches, identify_commands
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config
from crcr.config.settings import Settings
from crcr.config.workers import WorkerHost


def setup_options() -> argparse.ArgumentParser:
    """The options of the printed setup, a parent parser of the commands that print it."""
    options = argparse.ArgumentParser(add_help=False)
    # Without --host-dir, --host-user and --password-file the host tool chooses them for whoever runs it: as root
    # with systemd the defaults below (also those of the setup by hand), for a trial as oneself its own.
    options.add_argument("--master", metavar="HOST:PORT", help="where the host connects (default: settings)")
    options.add_argument(
        "--host-dir", metavar="DIR",
        help=f"directory of the workers on the host, absolute (default {DEFAULT_HOST_DIR} as root; the host tool's "
             "for a trial)",
    )
    options.add_argument(
        "--host-user", metavar="USER",
        help=f"unprivileged account that runs builds on the host (default {DEFAULT_HOST_USER} as root; for a trial, "
             "whoever runs the host tool)",
    )
    options.add_argument(
        "--password-file", metavar="FILE",
        help="the host's password on the host, absolute, readable by root only; systemd gives it to the workers on "
        f"their standard input, out of the builds' reach (default {DEFAULT_PASSWORD_FILE} as root)",
    )
    options.add_argument(
        "--by-hand", action="store_true",
        help="print the commands the host tool's `up` runs, to paste one by one (useradd, venv, create-worker, the "
             "password file, systemd), instead of the tool and its one command",
    )
    options.add_argument("--systemd-unit", metavar="FILE",
                         help="with --by-hand: also write the systemd unit to FILE")
    return options


def check_setup_options(args) -> None:
    """Refuse options the printed setup cannot carry safely, before anything is written."""
    if args.host_dir is not None:
        hostsetup.check_host_dir(args.host_dir)
    if args.password_file is not None:
        hostsetup.check_host_dir(args.password_file, "--password-file")
    if args.host_user is not None:
        hostsetup.check_host_user(args.host_user)
    if args.systemd_unit and not args.by_hand:
        raise ConfigError("--systemd-unit: only with --by-hand (crcr-host up writes its units' systemd unit itself)")
    if args.password_file and not args.by_hand:
        raise ConfigError("--password-file: only with --by-hand (crcr-host up keeps the password in its host folder's "
                          "state/, which only the account running up reads)")


def setup_by_hand(args, settings: Settings, host: WorkerHost, password: str) -> HostSetup:
    """The setup by hand, with today's defaults: those of the host tool run as root."""
    return HostSetup(
        host=host,
        password=password,
        master_address=args.master or settings.worker_address,
        keepalive=settings.worker_keepalive,
        host_dir=PurePosixPath(args.host_dir or DEFAULT_HOST_DIR),  # checked by check_setup_options
        host_user=args.host_user or DEFAULT_HOST_USER,
        password_file=PurePosixPath(args.password_file or DEFAULT_PASSWORD_FILE),  # checked by check_setup_options
        identify=identify_commands(settings.workers_dir, host),
    )


def host_up(args, settings: Settings, host: WorkerHost, password: str) -> HostUp:
    return HostUp(host=host, password=password, master_address=args.master or settings.worker_address,
                  web_url=settings.web_url, host_dir=args.host_dir, host_user=args.host_user,
                  identify=identify_commands(settings.workers_dir, host),
                  compiler_caches=compiler_caches(load_relay_config(settings), host))


def print_setup(args, settings: Settings, host: WorkerHost, password: str) -> None:
    if not args.by_hand:
        print(host_up(args, settings, host, password).instructions())
        return
    setup = setup_by_hand(args, settings, host, password)
    unit_file = None
    if args.systemd_unit:
        Path(args.systemd_unit).write_text(setup.systemd_unit(), encoding="utf-8")
        unit_file = args.systemd_unit
    print(setup.instructions(unit_file=unit_file))
