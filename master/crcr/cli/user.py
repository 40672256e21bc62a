"""`crcr user add|remove|list`: who may sign in to a relay whose settings say `auth: users`."""

from __future__ import annotations

import argparse
import getpass
import sys

from crcr.cli.subcommands import add_command
from crcr.config.errors import ConfigError
from crcr.config.paths import display_path
from crcr.config.settings import Settings, load_settings
from crcr.config.users import add_user, check_name, check_password, read_users, remove_user, users_file


def cmd_add(args) -> int:
    settings = load_settings()
    check_name(args.name)
    password = check_password(_new_password(args.name))
    path = users_file(settings.secrets_dir)
    added = add_user(path, args.name, password)
    print(f"{'added user' if added else 'changed the password of'} '{args.name}' in {display_path(path)}; "
          "it signs in with it from now on, no reconfig needed")
    _warn_unused(settings)
    return 0


def cmd_remove(args) -> int:
    settings = load_settings()
    path = users_file(settings.secrets_dir)
    remove_user(path, args.name)
    print(f"removed user '{args.name}' from {display_path(path)}; it can no longer sign in (a session it already "
          "opened lasts until it expires)")
    _warn_unused(settings)
    return 0


def cmd_list(args) -> int:
    for name in read_users(users_file(load_settings().secrets_dir)):
        print(name)
    return 0


def _new_password(name: str) -> str:
    """From standard input when it is not a terminal (scripts: `... | crcr user add NAME`), else asked twice.
    Never an argument: other users of the machine see a command's arguments."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    password = getpass.getpass(f"password for {name}: ")
    if getpass.getpass(f"password for {name} again: ") != password:
        raise ConfigError("the two passwords differ; nothing changed")
    return password


def _warn_unused(settings: Settings) -> None:
    if settings.auth != "users":
        print(f"note: this relay signs in with {settings.auth} (the auth setting), not with the users file",
              file=sys.stderr)


def add_user_commands(sub: argparse._SubParsersAction) -> None:
    user = sub.add_parser(
        "user", help="add, remove and list who may sign in (relays with auth: users)",
        description="Manage the users file in the secrets folder (the settings' secrets_dir): the names and "
        "scrypt-hashed passwords of who may sign in to a relay whose auth setting is 'users'. Changes take effect "
        "at the next sign-in; make a user an admin with the admins setting (CRCR_ADMINS).",
    )
    commands = user.add_subparsers(dest="user_command", required=True, metavar="COMMAND")
    name_help = "the user's name: a GitHub login's letters, digits and '-', so that it can be named as a maintainer"
    add = add_command(
        commands, "add", cmd_add, "add a user, or change a user's password",
        "Add a user, or change the password of one. The password is read from standard input when it is not a "
        "terminal (one line), and asked twice otherwise; it is never an argument.",
    )
    add.add_argument("name", metavar="NAME", help=name_help)
    remove = add_command(commands, "remove", cmd_remove, "remove a user: it can no longer sign in")
    remove.add_argument("name", metavar="NAME", help=name_help)
    add_command(commands, "list", cmd_list, "print the users' names, one per line")
