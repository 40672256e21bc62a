"""A small client of the running relay's REST and JSON-RPC API (Buildbot's /api/v2), for the crcr command."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Callable


def call(url: str, body: dict | None = None) -> dict:
    """GET (or POST a JSON body to) the relay's REST API; JSON error replies are returned, not raised.

    Raises urllib.error.URLError when the relay cannot be reached."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as e:
        return _json_or_text(e.read())


def call_force_scheduler(url: str, scheduler_name: Callable[[str], str], backend: str, params: dict) -> Any:
    """The result of `force` asked of the backend's scheduler named by `scheduler_name` (force_scheduler_name,
    bisect_scheduler_name) on the relay at `url`, with the form's fields `params`.

    Raises RuntimeError with what the user must read: the relay cannot be reached, has no such scheduler (naming
    the backends that have one), or refused the fields (Buildbot's {field: problem})."""
    url = url.rstrip("/")
    scheduler = scheduler_name(backend)
    try:
        listed = call(f"{url}/api/v2/forceschedulers")
        if "forceschedulers" not in listed:
            raise RuntimeError(f"the relay at {url} did not list its force schedulers: {_message(listed)}")
        names = [s["name"] for s in listed["forceschedulers"]]
        if scheduler not in names:
            # A kind's schedulers are all named <prefix><backend>; the other kinds' are not backends of this one.
            prefix = scheduler_name("")
            backends = ", ".join(sorted(n.removeprefix(prefix) for n in names if n.startswith(prefix))) or "none"
            raise RuntimeError(f"no backend '{backend}' on the relay at {url} (it has: {backends})")
        body = {"jsonrpc": "2.0", "id": 1, "method": "force", "params": params}
        reply = call(f"{url}/api/v2/forceschedulers/{scheduler}", body)
    except OSError as e:  # URLError, and a connection reset or timed out once made
        raise RuntimeError(f"cannot reach the relay at {url}: {getattr(e, 'reason', e)}") from None
    if "error" in reply:
        raise RuntimeError(_message(reply))
    return reply["result"]


def _message(reply: dict) -> str:
    error = reply.get("error", reply)
    message = error.get("message", error) if isinstance(error, dict) else error
    # Buildbot reports a refused force form as {field: problem}.
    if isinstance(message, dict):
        return "; ".join(f"{field}: {problem}" for field, problem in message.items())
    return str(message)


def _json_or_text(raw: bytes) -> dict:
    try:
        return json.loads(raw)
    except ValueError:
        return {"error": {"message": raw.decode(errors="replace")}}
