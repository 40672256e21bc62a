"""`crcr force BACKEND REVISION`: a build of an upstream revision, asked of the running relay's force scheduler."""

from __future__ import annotations

import argparse

from crcr.cli.relayapi import add_sign_in_options, call_force_scheduler, credentials_from
from crcr.cli.subcommands import add_command
from crcr.config.settings import load_settings
from crcr.names import force_scheduler_name


def cmd_force(args) -> int:
    url = (args.url or load_settings().web_url).rstrip("/")
    params = {"revision": args.revision, "reason": args.reason}
    buildset_id, request_ids = call_force_scheduler(
        url, force_scheduler_name, args.backend, params, credentials_from(args))
    request_id = next(iter(request_ids.values()))
    print(f"requested: buildset {buildset_id}, build request {request_id}")
    print(f"follow it at {url}/#/buildrequests/{request_id}")
    return 0


def add_force_command(sub: argparse._SubParsersAction) -> None:
    force = add_command(
        sub, "force", cmd_force, "force-build an upstream revision for one backend",
        "Ask the running relay to build an upstream revision for one backend. The revision (a full or abbreviated "
        "sha of a followed branch, or a branch name) is pinned to its exact commit before the build.",
    )
    force.add_argument("backend", metavar="BACKEND")
    force.add_argument("revision", metavar="REVISION", help="full or abbreviated sha, or branch name")
    force.add_argument("--reason", default="forced from the command line", help="shown with the build")
    force.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
    add_sign_in_options(force)
