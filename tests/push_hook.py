"""The test upstream's post-receive hook: each pushed branch told at once to every relay following the upstream, as
GitHub's push webhook tells a real relay (buildmaster/changes/webhook.py), so that the relay polls now.

Without it a test relay had to poll its upstream every second to see a push promptly, and an idle master's polls
(git processes for each of its four branches, each second) took a seventh of a core, with several masters alive at
once on a 2-core machine. With it a push is told in a tenth of a second, and the relays poll every
CRCR_POLL_INTERVAL of conftest.relay_env only for a push no hook told (a master down at the time).

Standard library only: git runs it (through the hook harness.Upstream writes) with the venv's Python in the bare
repository, the pushed refs on stdin as '<old> <new> <ref>' lines. The relays are listed in RELAYS_FILE, one JSON object a line: their web address and
their webhook secret's file, read at each push (a test may write another secret). A relay that is down or refuses
is skipped: its poll sees the push.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import urllib.request
import uuid
from pathlib import Path

RELAYS_FILE = "crcr-test-relays"  # in the bare repository
HOOK_PATH = "change_hook/github"
NO_COMMIT = "0" * 40


def tell(relay: dict, old: str, new: str, ref: str) -> None:
    try:
        secret = Path(relay["secret_file"]).read_text().strip()
    except OSError:
        return  # no webhook secret: the relay's receiver is off
    body = json.dumps({"ref": ref, "before": old, "after": new, "deleted": new == NO_COMMIT,
                       "repository": {"full_name": relay["github_repo"]}}).encode()
    request = urllib.request.Request(relay["web_url"] + HOOK_PATH, data=body, method="POST", headers={
        "Content-Type": "application/json", "X-GitHub-Event": "push",
        # One delivery per relay: the masters of a cluster agree on a delivery's one receiver through their store.
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()})
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except OSError:  # urllib's HTTPError and URLError are OSErrors
        pass


def main() -> None:
    listed = Path(RELAYS_FILE)
    relays = [json.loads(line) for line in listed.read_text().splitlines()] if listed.exists() else []
    for line in sys.stdin:
        old, new, ref = line.split()
        if ref.startswith("refs/heads/"):
            for relay in relays:
                tell(relay, old, new, ref)


if __name__ == "__main__":
    main()
