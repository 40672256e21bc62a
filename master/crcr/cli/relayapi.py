"""A small client of the running relay's REST and JSON-RPC API (Buildbot's /api/v2), for the crcr command."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


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


def _json_or_text(raw: bytes) -> dict:
    try:
        return json.loads(raw)
    except ValueError:
        return {"error": {"message": raw.decode(errors="replace")}}
