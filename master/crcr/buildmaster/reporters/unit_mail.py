"""The mail to a host's admin when a unit of the host is taken out (steps/taking_out.py, docs/hardware-failures.md):
Buildbot's MailNotifier, on the message every master hears, sent by the leader alone."""

from __future__ import annotations

from email.utils import make_msgid, parseaddr

from buildbot.reporters.mail import MailNotifier
from buildbot.util import ComparableMixin

from crcr.buildmaster.steps.taking_out import UNIT_PAUSED
from crcr.config.settings import Settings
from crcr.github.limits import cut
from crcr.names import leads

SUBJECT_LIMIT = 200  # characters of the mail's subject; what it cuts, the body says whole


def header_text(text: str, limit: int | None = None) -> str:
    """Text from a test's output or a host (a failure line, an address) fit for a mail header: each control
    character a space (a vertical tab or a form feed ends a header's line as a newline does, and Python's email
    module then refuses the whole mail as carrying a header of its own), runs of spaces one, at most `limit`
    characters."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if limit is None else cut(text, limit)


def message_id(mail_from: str) -> str:
    """A Message-ID in the domain of the relay's From address (the local host's name without one)."""
    return make_msgid(domain=parseaddr(mail_from)[1].rpartition("@")[2] or None)


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
        m["Message-ID"] = message_id(self.fromaddr)
        return super().sendMail(m, recipients)


def smtp_relay(settings: Settings) -> tuple[str, int] | None:
    """CRCR_SMTP_RELAY as (host, port); None without one."""
    if settings.smtp_relay is None:
        return None
    host, port = settings.smtp_relay.rsplit(":", 1)
    return host, int(port)


def unit_mailers(settings: Settings) -> list[MailNotifier]:
    """Buildbot's MailNotifier (as UnitMailNotifier) sending the units-taken-out mail through CRCR_SMTP_RELAY; none
    without one."""
    relay = smtp_relay(settings)
    if relay is None:
        return []
    return [UnitMailNotifier(fromaddr=settings.mail_from, relayhost=relay[0], smtpPort=relay[1],
                             generators=[UnitPausedGenerator()])]
