"""A stand-in for the GitHub REST API (the one service tests cannot reach): records every request.

It answers POST /repos/{owner}/{repo}/statuses/{sha} like GitHub does (201 with the status) and
can be told to fail the next N requests, so tests can check what the relay does then.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATUS_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>[0-9a-f]{40})$")


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict
    body: dict | None
    answered: int  # the HTTP status the fake replied with


class FakeGitHub:
    def __init__(self):
        self.requests: list[Recorded] = []
        self._failures_left = 0
        self._failing_sha: str | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> "FakeGitHub":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, count: int, sha: str | None = None) -> None:
        """Answer 500 to the next `count` requests (only those about commit `sha`, if given)."""
        with self._lock:
            self._failures_left, self._failing_sha = count, sha

    def statuses(self, sha: str | None = None, context: str | None = None) -> list[dict]:
        """The status payloads posted, in order, with the repository and sha they were posted to."""
        with self._lock:
            recorded = list(self.requests)
        found = []
        for r in recorded:
            m = STATUS_PATH.match(r.path)
            if r.method != "POST" or not m or r.body is None:
                continue
            status = {
                **r.body,
                "repo": m["repo"],
                "sha": m["sha"],
                "authorization": r.headers.get("Authorization"),
                "answered": r.answered,
            }
            if (sha is None or m["sha"] == sha) and (context is None or status.get("context") == context):
                found.append(status)
        return found

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with fake._lock:
                    failing = fake._failures_left > 0 and (fake._failing_sha or "") in self.path
                    fake._failures_left -= failing
                    code = 500 if failing else 201 if STATUS_PATH.match(self.path) else 404
                    fake.requests.append(Recorded("POST", self.path, dict(self.headers), body, code))
                if code == 500:
                    return self._reply(500, {"message": "Server Error (told to fail by the test)"})
                if code == 404:
                    return self._reply(404, {"message": "Not Found"})
                return self._reply(201, {"id": len(fake.requests), **(body or {})})

            def _reply(self, code: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler
