"""A real SMTP server on loopback for the end-to-end tests (aiosmtpd's), keeping each mail it receives: the relay's
MailNotifier sends to it as to a lab's mail server."""

from __future__ import annotations

import email
import email.policy
import threading
from contextlib import contextmanager
from email.message import EmailMessage

from aiosmtpd.controller import Controller

from harness import free_port


class Mailbox:
    """aiosmtpd's handler: each message received, with the addresses the envelope gave it to."""

    def __init__(self):
        self._lock = threading.Lock()  # aiosmtpd receives in its own thread
        self._received: list[tuple[list[str], EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._lock:
            self._received.append((list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"

    def received(self) -> list[tuple[list[str], EmailMessage]]:
        with self._lock:
            return list(self._received)


@contextmanager
def smtp_server():
    """(the mailbox, its host:port, as CRCR_SMTP_RELAY takes it) while the server runs."""
    mailbox, port = Mailbox(), free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, f"127.0.0.1:{port}"
    finally:
        controller.stop()
