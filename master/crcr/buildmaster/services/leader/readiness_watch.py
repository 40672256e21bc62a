"""One e-mail to a backend's maintainers (its file's `mail:`) when PyTorch's HUD would demote it: an L3 backend, or an
L2 one ready for L3, with a criterion failing over its demotion window (health/readiness.py; the mail:
reporters/readiness_mail.py). Once per at-risk episode: not again until every criterion of the backend passed over
that window once. The backends mailed in their current episode are kept in Buildbot's state table, across restarts
and leaders. The leader looks hourly on the master's clock, and as it takes the lead (a master's start); configured
only with an SMTP relay (CRCR_SMTP_RELAY)."""

from __future__ import annotations

from buildbot.util import service
from buildbot.util.state import StateMixin
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.reporters.readiness_mail import readiness_mail, send
from crcr.buildmaster.util.leader_duty import PeriodicDuty
from crcr.buildmaster.util.relay_services import relay_health
from crcr.health.readiness import AT_RISK

READINESS_WATCH_SERVICE = "crcr-l3-readiness-watch"
CHECK_EVERY = 3600
MAILED_STATE = "mailed"  # [the backends mailed in their current at-risk episode]


class ReadinessWatch(PeriodicDuty, service.BuildbotService, StateMixin):
    name = READINESS_WATCH_SERVICE
    period = CHECK_EVERY
    what = "looking at the backends' L3 readiness"

    def checkConfig(self, mail_to: dict[str, list[str]], web_url: str, smtp_relay: tuple[str, int], mail_from: str):
        pass

    def reconfigService(self, mail_to: dict[str, list[str]], web_url: str, smtp_relay: tuple[str, int],
                        mail_from: str):
        """`mail_to`: {backend: its maintainers' addresses} of the backends with some; `smtp_relay`: (host, port)."""
        self.mail_to, self.web_url, self.smtp_relay, self.mail_from = dict(mail_to), web_url, smtp_relay, mail_from

    def duty(self):
        return self.check()

    @defer.inlineCallbacks
    def check(self):
        """Mails each backend at risk not mailed in its current episode; a backend clear (every demotion-window
        criterion passing) ends its episode. What it mailed is kept mail by mail: a mail that fails is tried again
        at the next look, the others are not sent twice."""
        mailed = set((yield self.getState(MAILED_STATE, [])))
        health = relay_health(self.master)
        for backend, addresses in sorted(self.mail_to.items()):
            readiness = yield health.l3_readiness(backend)
            if all(c["passes"] for c in readiness["demotion"]) and backend in mailed:
                mailed.discard(backend)
                yield self.setState(MAILED_STATE, sorted(mailed))
            elif readiness["state"] == AT_RISK and backend not in mailed:
                mail = readiness_mail(backend, readiness, self.web_url, self.mail_from, addresses,
                                      self.master.reactor.seconds())
                yield send(self.smtp_relay, mail)
                log.msg(f"crcr: mailed {', '.join(addresses)}: {mail['Subject']}")
                mailed.add(backend)
                yield self.setState(MAILED_STATE, sorted(mailed))


def readiness_watches(backends, web_url: str, smtp_relay: tuple[str, int] | None, mail_from: str) -> list:
    """The watch of the backends (config.backend.Backend) whose files give addresses; none without an SMTP relay."""
    mail_to = {b.name: list(b.mail) for b in backends if b.mail}
    if smtp_relay is None:
        return []
    return [ReadinessWatch(mail_to=mail_to, web_url=web_url, smtp_relay=smtp_relay, mail_from=mail_from)]
