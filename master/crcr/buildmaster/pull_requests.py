"""Pull requests: which backends build a PR's head, and cancelling what a newer push, an unlabel or a close ends."""

from __future__ import annotations

from crcr.names import PULL_REQUESTS_SERVICE


def cancel_reason(master, buildrequestid: int) -> str | None:
    """Why the relay cancelled a PR build request ('Superseded by 1a2b3c4d5e'); None when it did not."""
    service = master.service_manager.namedServices.get(PULL_REQUESTS_SERVICE)
    return service.cancel_reasons.get(buildrequestid) if service is not None else None
