"""What a repository_dispatch of PyTorch's relay carries to a backend's repository (docs/pytorch-relay.md): the
upstream event it wraps, the commit that event asks built, what a callback echoes of it, and the key under which
the masters agree to act on it once."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from crcr.store.tables.github import DELIVERY_LENGTH

SHA = re.compile(r"^[0-9a-f]{40}$")
# The pull_request actions PyTorch's relay dispatches, but closed: those that ask for a build.
BUILDING_ACTIONS = ("opened", "reopened", "synchronize")


@dataclass(frozen=True)
class RelayedEvent:
    """What a repository_dispatch of PyTorch's relay carries (its client_payload): the upstream event's name, its
    X-GitHub-Delivery id, and its whole payload."""

    event: str
    delivery: str
    payload: dict

    def commit(self) -> str | None:
        """The upstream commit the event asks built: a pull request's head, a push's newest commit; None when it
        asks for none."""
        if self.event == "pull_request":
            if self.payload.get("action") not in BUILDING_ACTIONS:  # closed: nothing to build, nor to report
                return None
            sha = ((self.payload.get("pull_request") or {}).get("head") or {}).get("sha")
        else:
            sha = self.payload.get("after")
        return sha if sha is not None and SHA.match(sha) else None

    def echo(self) -> dict:
        """What a callback echoes of the upstream event (client_payload.payload): the fields PyTorch's relay and its
        HUD read (a PR's number, head and labels; the commit, as `head_sha`; the repository), not the whole event
        (a build property's worth, kept three days)."""
        payload = self.payload
        echo = {"repository": {"full_name": (payload.get("repository") or {}).get("full_name")},
                "head_sha": self.commit()}  # where HUD takes a push's commit from (else it shows the delivery id)
        if self.event == "pull_request":
            pr = payload.get("pull_request") or {}
            echo |= {"action": payload.get("action"), "number": pr.get("number"), "pull_request": {
                "number": pr.get("number"), "html_url": pr.get("html_url"),
                "head": {"sha": (pr.get("head") or {}).get("sha"), "ref": (pr.get("head") or {}).get("ref")},
                "base": {"ref": (pr.get("base") or {}).get("ref")},
                "labels": [{"name": label["name"]} for label in pr.get("labels") or []],
            }}
        else:
            echo |= {"ref": payload.get("ref"), "before": payload.get("before"), "after": payload.get("after")}
        return echo

    def claim_key(self, repository: str) -> str:
        # The deliveries table keeps ids of DELIVERY_LENGTH characters: a digest of the upstream id and the repository.
        digest = hashlib.sha256(f"{self.delivery}\n{repository.casefold()}".encode()).hexdigest()
        return f"dispatch:{digest}"[:DELIVERY_LENGTH]


def relayed_event(payload: dict) -> RelayedEvent:
    """The relayed event of a repository_dispatch whose shape was checked."""
    carried = payload["client_payload"]
    return RelayedEvent(carried["event_type"], carried["delivery_id"], carried["payload"])
