"""Reading the files the relay is pointed at: only inside their folder, only regular files, bounded in size.

A file that leads out of its folder through a symbolic link is refused before anything of it is read,
so no message can show a line of, say, the secrets directory. The size limits keep a huge file from
being read into memory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from crcr.config.errors import ConfigError
from crcr.config.paths import display_path

MIB = 2**20
# Backend, worker host, settings and torch-spyre files: torch-spyre's largest real config is 37 KB.
YAML_LIMIT = 1 * MIB
# Ascend's real pr_skip_list.jsonl is 636 KB with 5164 entries, and grows.
SKIP_LIST_LIMIT = 8 * MIB


def refuse_outside(path: Path, folder: Path) -> None:
    """Raise ConfigError naming `path` when it, following its symbolic links, leads out of `folder`."""
    if path.parent == folder and not path.is_symlink():
        return  # a file of the folder itself that is no link: resolving both costs more (hundreds per reconfig)
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except RuntimeError:  # Python 3.11's Path.resolve on a loop of links
        raise ConfigError(f"{display_path(path)}: cannot be read: a loop of symbolic links") from None
    if not inside:
        raise ConfigError(
            f"{display_path(path)}: leads outside {display_path(folder)} through a symbolic link; "
            "only files inside it are read"
        )


def read_text(path: Path, limit: int) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes; otherwise ConfigError naming the file."""
    try:
        # Non-blocking, so that a named pipe is refused below rather than waited on for ever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise ConfigError(f"{display_path(path)}: cannot be read: {e.strerror}") from None
    with open(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{display_path(path)}: is not a regular file")
        if info.st_size > limit:
            raise ConfigError(_too_large(path, limit, info.st_size))
        data = f.read(limit + 1)  # the file may have grown since fstat
    if len(data) > limit:
        raise ConfigError(_too_large(path, limit, len(data)))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{display_path(path)}: the file is not UTF-8 text") from None


def _too_large(path: Path, limit: int, size: int) -> str:
    return f"{display_path(path)}: the file must be at most {limit // MIB} MiB (got {size} bytes)"
