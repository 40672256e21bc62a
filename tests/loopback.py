"""A stand-in for the relay's HTTP API on loopback, for the CLI's tests: a test's handler answering JSON (or HTML),
served from a thread. (GitHub's stand-in, fakegithub, has its own server: it is taken down and brought back for
outages.)"""

from __future__ import annotations

import json
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_in_thread(server: socketserver.BaseServer) -> threading.Thread:
    """Serves `server` from a thread of its own until its shutdown(), which it looks for every 50 ms: at socketserver's
    default of half a second, every stop of a stand-in waited that long."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return thread


class JsonHandler(BaseHTTPRequestHandler):
    def reply(self, status: int, body: dict | str) -> None:
        """Answer `status` with `body` as JSON, or as HTML when it is a str."""
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html" if isinstance(body, str) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass  # a line per request would bury the CLI's own output in a failing test's report


class LoopbackServer:
    """Serves `handler` (a JsonHandler) on 127.0.0.1 from its creation until close() (or the end of a with)."""

    def __init__(self, handler: type[JsonHandler]):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        serve_in_thread(self._server)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
