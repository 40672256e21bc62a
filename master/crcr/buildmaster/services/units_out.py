"""A unit that keeps hitting the hardware is taken out (docs/hardware-failures.md): after its device's `pause_after`
infrastructure failures in a row, Buildbot's own worker pause (no build is sent to it, the other units build on)
with its reason, which the UI and `crcr worker list` show; and one e-mail to its host's admin through Buildbot's
MailNotifier, sent by the leader alone (every master hears the message). `crcr worker resume <unit>` puts it back:
Buildbot's unpause."""

from __future__ import annotations

from email.utils import parseaddr

from buildbot.reporters.mail import MailNotifier
from buildbot.util import ComparableMixin
from twisted.internet import defer

from crcr.config.settings import Settings
from crcr.names import leads
from crcr.store.service import relay_store

UNIT_PAUSED = ("crcr", "units", "paused")  # {name, workerid, host, admin, backend, card, reason, failure, log_url}


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
        address = parseaddr(message.get("admin") or "")[1]
        if not leads(master) or "@" not in address:
            return None
        body = (f"The relay took unit {message['name']} of host {message['host']} out: {message['reason']}.\n\n"
                f"Card: {message.get('card') or 'not identified (no identify command for its device)'}\n"
                f"Backend: {message['backend']}\nThe log of the last build it failed: {message['log_url']}\n\n"
                f"No build goes to it until it is resumed (crcr worker resume {message['name']}, or the worker's "
                "page in the relay's UI); the other units of its device build meanwhile.\n")
        return {"body": body.encode(), "subject": f"crcr: unit {message['name']} taken out ({message['failure']})",
                "type": "plain", "results": None, "builds": None, "buildset": None, "users": [address],
                "patches": None, "logs": None, "worker": message["name"]}


def unit_mailers(settings: Settings) -> list[MailNotifier]:
    """Buildbot's MailNotifier sending the units-taken-out mail through CRCR_SMTP_RELAY; none without one."""
    if settings.smtp_relay is None:
        return []
    host, port = settings.smtp_relay.rsplit(":", 1)
    return [MailNotifier(fromaddr=settings.mail_from, relayhost=host, smtpPort=int(port),
                         generators=[UnitPausedGenerator()])]
