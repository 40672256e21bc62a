"""The backends whose device has no unit connected, and since when, as JSON for the home page:

    GET /plugins/crcr/api/disconnected
    {"backends": [{"backend", "device", "since", "never_connected"}]}, longest out first

`since` is in seconds since the epoch: when the device's last unit went, or, when none of its units has connected
since the master started, when the master started (or the reconfig that added them); never_connected says which.
A device counts as disconnected while none of its units is connected to any of the cluster's masters.
A backend no host offers has no units at all: it is inactive, not disconnected, and not listed.
"""

from __future__ import annotations

from twisted.internet import defer

from crcr.buildmaster.util.relay_services import device_presence
from crcr.buildmaster.www.bisections import JsonResource


class DisconnectedResource(JsonResource):
    """`backends` gives the configured backends' names and devices ({"name", "device", ...})."""

    def __init__(self, master, backends):
        super().__init__(master)
        self.backends = backends

    @defer.inlineCallbacks
    def answer(self, request):
        presence = device_presence(self.master)
        outages = []
        if presence is not None:
            yield presence.refresh()  # units connected to the other masters now
            outages = presence.outages()
        return {"backends": [
            {"backend": backend["name"], "device": outage.device, "since": outage.since,
             "never_connected": outage.never_connected}
            for outage in outages
            for backend in self.backends()
            if backend["device"] == outage.device
        ]}
