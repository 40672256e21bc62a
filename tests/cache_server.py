"""A remote compiler cache standing in for the one several build hosts share (CRCR_COMPILER_CACHE_REMOTE): an HTTP
server in a thread keeping what is PUT and answering GET and HEAD, as nginx with WebDAV does for ccache."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CacheServer:
    def __init__(self):
        self.entries: dict[str, bytes] = {}
        self.gets = self.hits = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.gets += 1
                self._answer(self.path in server.entries, server.entries.get(self.path, b""))

            def do_HEAD(self):
                self._answer(self.path in server.entries, b"", body=False)

            def do_PUT(self):
                server.entries[self.path] = self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _answer(self, found: bool, content: bytes, body: bool = True):
                server.hits += found and body
                self.send_response(200 if found else 404)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                if body:
                    self.wfile.write(content)

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ccache"

    def __enter__(self) -> CacheServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()
