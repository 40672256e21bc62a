"""An upstream served as a lab mirror serves it: a real `git daemon` over git://, with or without filter support
(partial clone), behind a proxy that counts the bytes its clients download. Used by the checkout tests and
bench/checkout.py."""

from __future__ import annotations

import random
import socket
import socketserver
import subprocess
import threading
from pathlib import Path

from harness import Upstream, free_port, run, wait_until
from loopback import serve_in_thread


def fill_history(upstream: Upstream, commits: int, files: int, file_bytes: int, seed: int = 13) -> None:
    """Push `commits` commits to main, each rewriting one of `files` files with `file_bytes` of fresh text: a
    history mostly made of blobs, as pytorch's is. One `git fast-import`, so hundreds of commits take a second."""
    rng = random.Random(seed)
    stream = []
    for number in range(1, commits + 1):
        message = f"History commit {number}\n".encode()
        content = rng.randbytes(file_bytes // 2).hex().encode()
        stream += [
            b"commit refs/heads/main\n",
            f"committer Upstream <up@example.com> {1_700_000_000 + number} +0000\n".encode(),
            f"data {len(message)}\n".encode(), message,
            f"M 100644 inline data/file{number % files:03d}.txt\n".encode(),
            f"data {len(content)}\n".encode(), content, b"\n",
        ]
    subprocess.run(["git", "-C", upstream.work, "fast-import", "--quiet"], input=b"".join(stream), check=True)
    upstream.git("checkout", "-q", "-f", "main")
    upstream.push("main")


def packed_change(upstream: Upstream, sha: str) -> int:
    """Bytes of a pack of what commit `sha` adds to its parent: what an ideal incremental fetch transfers."""
    pack = subprocess.run(["git", "-C", upstream.bare, "pack-objects", "--revs", "--stdout", "-q"],
                          input=f"{sha}\n^{sha}~1\n".encode(), capture_output=True, check=True)
    return len(pack.stdout)


def bytes_on_disk(folder: Path) -> int:
    """The apparent size of every file under `folder`: what a .git holds, without block rounding."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class ServedUpstream:
    """`git daemon` serving upstream's bare repository; `url` reaches it directly, `counted_url` through the
    byte-counting proxy. `filters`: whether the server honours clients' --filter (uploadpack.allowFilter)."""

    def __init__(self, upstream: Upstream, filters: bool):
        self.upstream, self.filters = upstream, filters
        run(["git", "-C", upstream.bare, "config", "uploadpack.allowFilter", "true" if filters else "false"])
        self.daemon_port, self.proxy_port = free_port(), free_port()
        self.url = f"git://127.0.0.1:{self.daemon_port}/{upstream.bare.name}"
        self.counted_url = f"git://127.0.0.1:{self.proxy_port}/{upstream.bare.name}"
        self._daemon: subprocess.Popen | None = None
        self._proxy: _CountingProxy | None = None

    def start(self) -> ServedUpstream:
        base = self.upstream.bare.parent
        self._daemon = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--export-all", "--informative-errors", f"--base-path={base}",
             "--listen=127.0.0.1", f"--port={self.daemon_port}", str(base)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self._proxy = _CountingProxy(("127.0.0.1", self.proxy_port), ("127.0.0.1", self.daemon_port))
        serve_in_thread(self._proxy)
        wait_until(lambda: run(["git", "ls-remote", self.url, "main"], check=False).returncode == 0, 15,
                   f"git daemon to serve {self.url}")
        return self

    def stop(self) -> None:
        if self._proxy:
            self._proxy.shutdown()
            self._proxy.server_close()
        if self._daemon:
            self._daemon.terminate()
            self._daemon.wait(10)

    @property
    def downloaded(self) -> int:
        """Bytes sent to clients of `counted_url` so far."""
        return self._proxy.downloaded

    def redirect_env(self) -> dict[str, str]:
        """Environment that makes git (and a buildbot-worker's git) reach `url` through the counting proxy, so
        that only that process's downloads are counted, not the master's polling of `url`."""
        return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{self.counted_url}.insteadOf",
                "GIT_CONFIG_VALUE_0": self.url}


class _CountingProxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, target):
        self.target = target
        self.downloaded = 0
        self._lock = threading.Lock()
        super().__init__(address, _Relay)

    def count(self, n: int) -> None:
        with self._lock:
            self.downloaded += n


class _Relay(socketserver.BaseRequestHandler):
    def handle(self):
        server = socket.create_connection(self.server.target)
        upload = threading.Thread(target=_pump, args=(self.request, server, None), daemon=True)
        upload.start()
        _pump(server, self.request, self.server.count)
        upload.join(10)
        server.close()


def _pump(source: socket.socket, sink: socket.socket, count) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
            if count:
                count(len(data))
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass
