"""A private PostgreSQL server on loopback for one test session (Debian's postgresql package)."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from pathlib import Path

from harness import free_port, run


def server_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    """initdb + pg_ctl in a temporary folder; as root, the server runs as the `postgres` user."""

    def __init__(self, bin_dir: Path):
        # Not under pytest's tmp folder: that is private to root, and the server runs as `postgres`.
        root = Path(tempfile.mkdtemp(prefix="crcr-postgres-"))
        self.datadir = root / "data"
        self.bin_dir = bin_dir
        self.port = free_port()
        self.root = root
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _pg(self, tool: str, *args) -> None:
        run([*self.as_user, self.bin_dir / tool, *args])

    def start(self) -> PostgresServer:
        if self.as_user:
            shutil.chown(self.root, "postgres")
        self._pg("initdb", "-D", self.datadir, "-A", "trust", "-U", "crcr", "--no-sync")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg("pg_ctl", "-D", self.datadir, "-o", options, "-l", self.root / "server.log", "-w", "start")
        self._pg("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "crcr", "buildbot")
        return self

    def stop(self) -> None:
        run([*self.as_user, self.bin_dir / "pg_ctl", "-D", self.datadir, "-m", "fast", "stop"], check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"postgresql://crcr@127.0.0.1:{self.port}/buildbot"
