"""A stand-in for the GitHub REST API (the one service tests cannot reach): records every request.

It answers POST /repos/{owner}/{repo}/statuses/{sha} like GitHub does (201 with the status) and
can be told to fail or leave unanswered the next N requests, so tests can check what the relay does then.

It speaks HTTP/1.0 and closes each connection after its answer without saying so, as a server closing a
keep-alive connection does: the relay's HTTP client then sometimes sends its next post on a connection
already closed, never answered, and must post it again (Twisted never re-sends a POST by itself).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATUS_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>[0-9a-f]{40})$")
NO_ANSWER = 0  # Recorded.answered of a request left unanswered


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict
    body: dict | None
    answered: int  # the HTTP status the fake replied with, or NO_ANSWER


class _Server(ThreadingHTTPServer):
    # Python's default listen backlog of 5 turned bursts of posts away for minutes: GitHub does not.
    request_queue_size = 1024


class FakeGitHub:
    def __init__(self):
        self.requests: list[Recorded] = []
        self._faults_left = 0
        self._faulty_sha: str | None = None
        self._fault = 500
        self._lock = threading.Lock()
        self._stopped = threading.Event()  # ends the wait of requests left unanswered
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> "FakeGitHub":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, count: int, sha: str | None = None) -> None:
        """Answer 500 to the next `count` requests (only those about commit `sha`, if given)."""
        self._next_faults(500, count, sha)

    def stall_next(self, count: int, sha: str | None = None) -> None:
        """Leave the next `count` requests (about `sha`, if given) unanswered while the stand-in runs, as a stalled
        GitHub connection does: the request was read, nothing comes back, the connection stays open."""
        self._next_faults(NO_ANSWER, count, sha)

    def _next_faults(self, fault: int, count: int, sha: str | None) -> None:
        with self._lock:
            self._fault, self._faults_left, self._faulty_sha = fault, count, sha

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
                    faulty = fake._faults_left > 0 and (fake._faulty_sha or "") in self.path
                    fake._faults_left -= faulty
                    code = fake._fault if faulty else 201 if STATUS_PATH.match(self.path) else 404
                    fake.requests.append(Recorded("POST", self.path, dict(self.headers), body, code))
                if code == NO_ANSWER:
                    fake._stopped.wait()
                    return
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
