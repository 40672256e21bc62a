"""A GitHub delivery to the webhook receiver read and checked before anything acts on it: its size, its
X-Hub-Signature-256, its JSON payload and that payload's shape; Refused, with the HTTP answer, when it fails one."""

from __future__ import annotations

import hashlib
import hmac
import json

from twisted.python import log

from crcr.buildmaster.changes.webhook_events import shape_problem
from crcr.store.tables.github import DELIVERY_LENGTH

MAX_BODY = 25 * 1024 * 1024  # GitHub does not deliver payloads over 25 MB: anything bigger is not GitHub's


class Refused(Exception):
    """A delivery the receiver does not act on, with the HTTP status and text of its answer."""

    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status, self.text = status, text


def check_shape(event: str, payload: dict, about: str, within: str = "") -> None:
    """Refused (400), and logged, when the payload of an event the relay acts on is not of the shape GitHub (or
    PyTorch's relay, `within` its dispatch) sends: what would fail inside is named here, field by field."""
    problem = shape_problem(event, payload, within)
    if problem is not None:
        log.msg(f"crcr: GitHub webhook refused (400, {problem.replace(chr(10), '; ')}): {about}")
        raise Refused(400, problem)


def header(request, name: bytes) -> str:
    value = request.getHeader(name)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else (value or "")


def remote_address(request) -> str:
    address = request.getClientAddress()
    return getattr(address, "host", str(address))


def body_size(request) -> int:
    """The body's length, without reading it (twisted keeps a big one in a temporary file)."""
    content = request.content
    size = content.seek(0, 2)
    content.seek(0)
    return size


def signature_problem(body: bytes, signature: str, secret: str) -> str | None:
    """Why X-Hub-Signature-256 is not GitHub's for this body and secret; None when it is."""
    if not signature:
        return "no X-Hub-Signature-256 signature"
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        return "wrong X-Hub-Signature-256 signature"
    return None


def json_payload(request, body: bytes, delivery: str) -> dict:
    """The JSON payload of a signed delivery; Refused (400) when it is not what GitHub sends."""
    if not delivery or len(delivery) > DELIVERY_LENGTH:
        raise Refused(400, f"an X-GitHub-Delivery id of 1 to {DELIVERY_LENGTH} characters is required")
    content_type = header(request, b"Content-Type").split(";")[0].strip()
    if content_type != "application/json":
        raise Refused(400, f"content type {content_type!r}: set the webhook's content type to application/json")
    try:
        payload = json.loads(body)
    except ValueError:
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(payload, dict):
        raise Refused(400, "the body is not a JSON object")
    return payload
