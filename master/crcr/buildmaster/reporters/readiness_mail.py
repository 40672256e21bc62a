"""The mail to a backend's maintainers when PyTorch's HUD would demote it (services/leader/readiness_watch.py): each
criterion failing over the demotion window, its value, target and window, and the backend's Health page; with the
headers a mail reader expects (From, To, Date, Message-ID), as reporters/unit_mail.py's mail has them."""

from __future__ import annotations

import time
from email.message import EmailMessage
from email.utils import formatdate, parseaddr

from twisted.mail.smtp import sendmail

from crcr.buildmaster.reporters.unit_mail import SUBJECT_LIMIT, header_text, message_id
from crcr.health.links import backend_page
from crcr.health.readiness import DEMOTION_DAYS, HELD_TO_L3


def readiness_mail(backend: str, readiness: dict, web_url: str, mail_from: str, to: list[str],
                   now: float) -> EmailMessage:
    """The mail about `backend` whose L3 readiness (health/readiness.py's answer) is at risk."""
    failing = [c for c in readiness["demotion"] if not c["passes"]]
    if readiness["level"] in HELD_TO_L3:
        opening = f"PyTorch's HUD would demote {backend} from {readiness['level']}"
    else:
        ready = time.strftime("%Y-%m-%d", time.gmtime(readiness["ready_since"]))
        opening = (f"{backend} is ready for L3 since {ready}, but once at L3 PyTorch's HUD would demote it again")
    criteria = "\n".join(f"  {c['text']}\n    {c['label']}: {c['value_text']}, target {c['target_text']}, over the "
                         f"last {c['window']} days" for c in failing)
    page = f"{web_url.rstrip('/')}/{backend_page(backend)}"
    mail = EmailMessage()
    mail["Subject"] = header_text(f"crcr: {backend} at risk of L3 demotion: {failing[0]['text']}", SUBJECT_LIMIT)
    mail["From"] = mail_from
    mail["To"] = ", ".join(to)
    mail["Date"] = formatdate(now, usegmt=True)
    mail["Message-ID"] = message_id(mail_from)
    mail.set_content(
        f"{opening}: over its demotion window (the last {DEMOTION_DAYS} days), by the jobs crcr reported to "
        f"PyTorch's relay, {'this criterion fails' if len(failing) == 1 else 'these criteria fail'}:\n\n"
        f"{criteria}\n\nEvery criterion beside its target: {page}\n\n"
        f"This is the one mail of this episode: the next comes only after every criterion passed over the "
        f"{DEMOTION_DAYS}-day window again.\n")
    return mail


def send(smtp_relay: tuple[str, int], mail: EmailMessage):
    """The mail through the SMTP relay (host, port), to the addresses of its To header; a Deferred."""
    host, port = smtp_relay
    sender = parseaddr(mail["From"])[1]
    recipients = [parseaddr(address.strip())[1] for address in mail["To"].split(",")]
    # The sender's domain to greet with: Twisted's default looks the host's name up (socket.getfqdn), seconds on a
    # host without DNS.
    return sendmail(host, sender, recipients, mail.as_bytes(), senderDomainName=sender.rpartition("@")[2],
                    port=port)
