"""A unit that keeps hitting the hardware is taken out (docs/hardware-failures.md): after its device's `pause_after`
infrastructure failures in a row, Buildbot's own worker pause (no build is sent to it, the other units build on) with
its reason (steps/taking_out.py), which the UI and `crcr worker list` show; and one e-mail to its host's admin through
Buildbot's MailNotifier (reporters/unit_mail.py), sent by the leader alone (every master hears the message). `crcr
worker resume <unit>` puts it back: Buildbot's unpause, which the leader records (UnitsResumed) so that its failures in
a row count from then on."""

from __future__ import annotations

from crcr.buildmaster.util.consumer import MessageConsumer
from crcr.buildmaster.util.leader_duty import LeaderDuty
from crcr.store.service import relay_store


class UnitsResumed(LeaderDuty, MessageConsumer):
    """Records each unit resumed (Buildbot's unpause: the UI's button, `crcr worker resume`) in the relay's store,
    once, on the leader (every master hears it): its card was looked at, so the builds that took it out no longer
    count in its failures in a row."""

    name = "crcr-units-resumed"

    def subscriptions(self):
        return [(("control", "worker", None, "unpause"), self._resumed)]

    def _resumed(self, key, message):
        if not self.leads():
            return None
        return relay_store(self.master).record_unit_resume(int(key[2]), int(self.master.reactor.seconds()))
