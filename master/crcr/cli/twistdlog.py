"""Follow a master's twistd.log from now on, as `tail -F` does: new lines only, across a log rotation."""

from __future__ import annotations

import os
from pathlib import Path


class LogFollower:
    """Lines written to the log after this object was made; twistd renames a full log to twistd.log.1 and starts
    a new one, so when the path names another file, the rest of the old one is read, then the new one."""

    def __init__(self, path: Path):
        self._path = path
        self._file = open(path, "rb")
        self._file.seek(0, os.SEEK_END)
        self._partial = b""

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> LogFollower:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def new_lines(self) -> list[str]:
        data = self._file.read()
        if not data and self._rotated():
            self._file.close()
            self._file = open(self._path, "rb")
            data = self._file.read()
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()  # not yet ended by a newline
        return [line.decode(errors="replace") for line in lines]

    def _rotated(self) -> bool:
        try:
            return os.stat(self._path).st_ino != os.fstat(self._file.fileno()).st_ino
        except FileNotFoundError:
            return False  # between the rename and the new file
