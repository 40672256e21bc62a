"""One way to declare a `crcr` subcommand: its line in the parent's list and its own --help description."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable


def add_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    func: Callable[[argparse.Namespace], int],
    summary: str,
    description: str | None = None,
    parents: Iterable[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """`summary` is listed by the parent's --help; `description` (default: the summary) opens the command's own."""
    command = subparsers.add_parser(name, help=summary, description=description or summary, parents=list(parents))
    command.set_defaults(func=func)
    return command
