"""A unit that keeps hitting the hardware is taken out (docs/hardware-failures.md): after its device's `pause_after`
infrastructure failures in a row, Buildbot's own worker pause (no build is sent to it, the other units build on)
with its reason, which the UI and `crcr worker list` show; and one e-mail to its host's admin through Buildbot's
MailNotifier, sent by the leader alone (every master hears the message). `crcr worker resume <unit>` puts it back:
Buildbot's unpause, which the leader records (UnitsResumed) so that its failures in a row count from then on."""

from __future__ import annotations

from email.utils import make_msgid, parseaddr

from buildbot.reporters.mail import MailNotifier
from buildbot.util import ComparableMixin
from twisted.internet import defer

from crcr.buildmaster.services.consumer import MessageConsumer
from crcr.buildmaster.services.leadership import LeaderDuty
from crcr.config.settings import Settings
from crcr.github.limits import cut
from crcr.names import leads
from crcr.store.service import relay_store

UNIT_PAUSED = ("crcr", "units", "paused")  # {name, workerid, host, admin, backend, card, reason, failure, log_url}
SUBJECT_LIMIT = 200  # characters of the mail's subject; what it cuts, the body says whole


def header_text(text: str, limit: int | None = None) -> str:
    """Text from a test's output or a host (a failure line, an address) fit for a mail header: each control
    character a space (a vertical tab or a form feed ends a header's line as a newline does, and Python's email
    module then refuses the whole mail as carrying a header of its own), runs of spaces one, at most `limit`
    characters."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if limit is None else cut(text, limit)


def pause_reason(pause_after: int, failure: str, unit: str) -> str:
    return (f"{pause_after} infrastructure failures in a row, the last {failure}; after a look at its card: "
            f"crcr worker resume {unit}")


def health_check_reason(unit: str, said: str) -> str:
    return f"its health check failed ({said}); after a look at its card: crcr worker resume {unit}"


@defer.inlineCallbacks
def take_out(master, unit: dict, reason: str, failure: str, log_url: str):
    """Pause `unit` ({name, workerid, host, admin, backend, card}) for `reason`, and tell its host's admin, with
    the log of the build that made it (`log_url`)."""
    yield master.data.control("pause", {"reason": reason}, ("workers", unit["workerid"]))
    master.mq.produce(UNIT_PAUSED, {**unit, "reason": reason, "failure": failure, "log_url": log_url})


@defer.inlineCallbacks
def take_out_if_failing(master, unit: dict, pause_after: int, failure: str, log_url: str):
    """Take `unit` out when its last `pause_after` builds each hit the hardware, `failure` the last one's text;
    True when it did."""
    if not (yield relay_store(master).failed_in_a_row(master.db.model, unit["workerid"], pause_after)):
        return False
    yield take_out(master, unit, pause_reason(pause_after, failure, unit["name"]), failure, log_url)
    return True


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


class UnitPausedGenerator(ComparableMixin):
    """The mail to a host's admin naming the unit taken out, its card, what it hit, the backend and the log; a
    generator of Buildbot's reporters, as its WorkerMissingGenerator is for a worker gone."""

    compare_attrs = ()
    wanted_event_keys = [UNIT_PAUSED]

    def check(self):
        pass

    def generate_name(self) -> str:
        """The reporter's name (Buildbot names a reporter after its generators)."""
        return "crcr_units_taken_out"

    def generate(self, master, reporter, key, message: dict):
        admin = header_text(message.get("admin") or "")
        if not leads(master) or "@" not in parseaddr(admin)[1]:
            return None
        body = (f"The relay took unit {message['name']} of host {message['host']} out: {message['reason']}.\n\n"
                f"Card: {message.get('card') or 'not identified (no identify command for its device)'}\n"
                f"Backend: {message['backend']}\nThe log of the last build it failed: {message['log_url']}\n\n"
                f"No build goes to it until it is resumed (crcr worker resume {message['name']}, or the worker's "
                "page in the relay's UI); the other units of its device build meanwhile.\n")
        subject = header_text(f"crcr: unit {message['name']} taken out ({message['failure']})", SUBJECT_LIMIT)
        return {"body": body.encode(), "subject": subject,
                "type": "plain", "results": None, "builds": None, "buildset": None, "users": [admin],
                "patches": None, "logs": None, "worker": message["name"]}


class UnitMailNotifier(MailNotifier):
    """Buildbot's MailNotifier, whose mail about a worker goes to its users through the SMTP envelope alone: that
    mail gets the headers a mail reader expects besides Buildbot's Date and From, To and Message-ID."""

    def sendMail(self, m, recipients):
        m["To"] = ", ".join(self.formatAddress(address) for address in recipients)
        m["Message-ID"] = make_msgid(domain=parseaddr(self.fromaddr)[1].rpartition("@")[2] or None)
        return super().sendMail(m, recipients)


def unit_mailers(settings: Settings) -> list[MailNotifier]:
    """Buildbot's MailNotifier (as UnitMailNotifier) sending the units-taken-out mail through CRCR_SMTP_RELAY; none
    without one."""
    if settings.smtp_relay is None:
        return []
    host, port = settings.smtp_relay.rsplit(":", 1)
    return [UnitMailNotifier(fromaddr=settings.mail_from, relayhost=host, smtpPort=int(port),
                         generators=[UnitPausedGenerator()])]
