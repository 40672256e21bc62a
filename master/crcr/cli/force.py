"""`crcr force BACKEND REVISION`: a build of an upstream revision, asked of the running relay's force scheduler."""

from __future__ import annotations

import argparse
import sys
import urllib.error

from crcr.cli.relayapi import call
from crcr.cli.subcommands import add_command
from crcr.config.settings import load_settings
from crcr.names import backend_of_force_scheduler, force_scheduler_name


def cmd_force(args) -> int:
    url = (args.url or load_settings().web_url).rstrip("/")
    try:
        known = [s["name"] for s in call(f"{url}/api/v2/forceschedulers")["forceschedulers"]]
        if force_scheduler_name(args.backend) not in known:
            backends = ", ".join(sorted(backend_of_force_scheduler(name) for name in known)) or "none"
            print(f"error: no backend '{args.backend}' on the relay at {url} (it has: {backends})", file=sys.stderr)
            return 1
        params = {"revision": args.revision, "reason": args.reason}
        body = {"jsonrpc": "2.0", "id": 1, "method": "force", "params": params}
        reply = call(f"{url}/api/v2/forceschedulers/{force_scheduler_name(args.backend)}", body)
    except urllib.error.URLError as e:
        print(f"error: cannot reach the relay at {url}: {e.reason}", file=sys.stderr)
        return 1
    if "error" in reply:
        message = reply["error"].get("message", reply["error"])
        # Buildbot reports a refused force form as {field: problem}.
        if isinstance(message, dict):
            message = "; ".join(f"{field}: {problem}" for field, problem in message.items())
        print(f"error: {message}", file=sys.stderr)
        return 1
    buildset_id, request_ids = reply["result"]
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
