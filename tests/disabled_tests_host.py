"""A stand-in for raw.githubusercontent.com serving test-infra's disabled-tests-condensed.json: an HTTP server in a
thread answering as that host does (an ETag on every 200, 304 Not Modified to an If-None-Match naming the current
one), its list changeable, every request's conditional headers recorded; it can answer an outage (a status) or a
body that is no list instead."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATH = "/pytorch/test-infra/generated-stats/stats/disabled-tests-condensed.json"


@dataclass(frozen=True)
class Asked:
    if_none_match: str | None
    if_modified_since: str | None
    answered: int  # the status code


def condensed_entry(issue: int, platforms: list[str] = ()) -> list:
    """An entry of the condensed list as test-infra writes it."""
    return [str(issue), f"https://github.com/pytorch/pytorch/issues/{issue}", list(platforms)]


class DisabledTestsHost:
    def __init__(self, tests: dict | None = None):
        self.body = b""
        self.failing: int | None = None  # a status answered instead of the list (an outage)
        self.requests: list[Asked] = []
        self._lock = threading.Lock()
        self.serve(tests or {})
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                with host._lock:
                    body, etag, failing = host.body, host.etag, host.failing
                if self.path != PATH:
                    status, body = 404, b"404: Not Found"
                elif failing is not None:
                    status, body = failing, b"upstream connect error"
                elif self.headers.get("If-None-Match") == etag:
                    status, body = 304, b""
                else:
                    status = 200
                with host._lock:
                    host.requests.append(Asked(self.headers.get("If-None-Match"),
                                               self.headers.get("If-Modified-Since"), status))
                self.send_response(status)
                if status in (200, 304):
                    self.send_header("ETag", etag)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{PATH}"

    def serve(self, tests: dict) -> None:
        """The list served from now on: {"test_x (__main__.TestY)": condensed_entry(...)}."""
        self.serve_text(json.dumps(tests, indent=1).encode())

    def serve_text(self, body: bytes) -> None:
        with self._lock:
            self.body = body
            self.etag = '"%s"' % hashlib.sha1(body).hexdigest()

    def asked(self) -> list[Asked]:
        with self._lock:
            return list(self.requests)

    def __enter__(self) -> DisabledTestsHost:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()
