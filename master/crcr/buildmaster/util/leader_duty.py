"""What a relay service acting only on the leader mixes in (services/leader/): told when its master gains or loses
the lead (RelayLeadership, services/every_master/leadership.py, does the telling)."""

from __future__ import annotations

from twisted.internet import defer

from crcr.names import leads


class LeaderDuty:
    """A service of the relay acting only while its master leads (mixed into a BuildbotService). lead() runs when
    the master takes the lead, or when the service starts on the leader: the place to catch up on what happened
    while no one of this master's led; follow() when it loses it."""

    def leads(self) -> bool:
        return leads(self.master)

    def lead(self):
        return defer.succeed(None)

    def follow(self):
        return defer.succeed(None)

    async def start_duty(self):
        """To call at the end of the service's startService."""
        if self.leads():
            await self.lead()
