"""Fetches a build stage's artifacts onto a unit, through its host's cache: shipped into a suite child's build folder
and run there with the host's python3, so the standard library only (artifacts.py runs it).

    python3 fetch_artifacts.py CACHE DEST GROUPS      (the token on its standard input)

CACHE: the host's cache, shared by its units; DEST: the build folder's artifacts folder, emptied, then given each
file (a hard link to the cached copy); GROUPS: JSON, a list of {url, files}, each the artifacts of one build: where
the relay serves them (+ a file name), and a list of {name, size, sha256}. The token comes on stdin, not in the
environment: buildbot-worker writes a command's environment into the unit's twistd.log (which the host's builds can
read) when its step asks, and of its stdin only the length.

A file is cached under its SHA-256, written to a temporary file, checked and renamed into place, so a cached file is
always whole. The units of a host fetch one file in turn under a lock of its own: the first downloads it, the others
find it cached. A build can change its artifact, which is the cached file (read-only, but the build account's, who
may make it writable), or put something else in the cache: so each use checks the cached file's size and SHA-256
first, and fetches it again when they are not the relay's. Files no build asked for in KEEP_DAYS are removed from
the cache.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

BLOCK = 1 << 20
KEEP_DAYS = 7
LOCK_SUFFIX = ".lock"


class FetchFailed(Exception):
    pass


def described(size: int, sha256: str) -> str:
    return f"{size} bytes of SHA-256 {sha256}"


def kept(expected: dict) -> str:
    """The file the relay kept, as described() describes a file."""
    return described(expected["size"], expected["sha256"])


def download(url: str, token: str, expected: dict, cached: Path) -> None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    digest, size = hashlib.sha256(), 0
    with tempfile.NamedTemporaryFile(dir=cached.parent, prefix=".part-", delete=False) as part:
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                while block := answer.read(BLOCK):
                    part.write(block)
                    digest.update(block)
                    size += len(block)
            if described(size, digest.hexdigest()) != kept(expected):
                raise FetchFailed(f"{expected['name']}: got {described(size, digest.hexdigest())}, not the "
                                  f"{kept(expected)} the relay kept")
            os.chmod(part.name, 0o444)  # the units share it: no suite changes it by mistake
            os.replace(part.name, cached)
        except urllib.error.HTTPError as e:
            raise FetchFailed(f"{expected['name']}: the relay answered {e.code}: "
                              f"{e.read().decode(errors='replace').strip()}") from None
        except OSError as e:
            raise FetchFailed(f"{expected['name']}: {url}: {e}") from None
        finally:
            if os.path.exists(part.name):
                os.unlink(part.name)


def held(cached: Path, expected: dict) -> str | None:
    """What the cache holds at `cached`: described as kept() describes `expected` when it is a file, None for
    nothing."""
    try:  # no link followed (it could be turned elsewhere once checked), no pipe waited on
        fd = os.open(cached, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        return "a link" if e.errno == errno.ELOOP else f"a file it cannot read ({e.strerror})"
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return "a folder" if stat.S_ISDIR(status.st_mode) else "a special file"
        if status.st_size != expected["size"]:
            return f"{status.st_size} bytes"
        digest = hashlib.sha256()
        while block := os.read(fd, BLOCK):
            digest.update(block)
        return described(status.st_size, digest.hexdigest())
    finally:
        os.close(fd)


def remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink()


def place(cached: Path, destination: Path) -> None:
    # A hard link, not a copy: one download and one file's room per host, not per unit. What a build does to its
    # link (the cached inode) reaches only the builds running beside it on the host, whose folders the same account
    # can change anyway; every later use checks the cached file first (held) and fetches it again if it changed.
    try:
        os.link(cached, destination)
    except OSError:  # the build folder on another file system than the cache
        shutil.copyfile(cached, destination)


def forget_unused(cache: Path, now: float) -> None:
    for entry in cache.iterdir():
        if entry.name.endswith(LOCK_SUFFIX) or entry.name.startswith("."):
            continue
        with open(cache / (entry.name + LOCK_SUFFIX), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if os.path.lexists(entry) and entry.lstat().st_mtime < now - KEEP_DAYS * 86400:
                remove(entry)  # a build's folder too: it would otherwise fail every fetch of the host from then on


def fetch(cache: Path, destination: Path, groups: list[dict], token: str) -> None:
    names = [expected["name"] for group in groups for expected in group["files"]]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # handed over by name: a shared build's and the backend's build's may not clash
        raise FetchFailed(f"two builds made an artifact named {', '.join(twice)}; rename one")
    cache.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(destination, ignore_errors=True)
    destination.mkdir(parents=True)
    for url, expected in [(group["url"], expected) for group in groups for expected in group["files"]]:
        cached = cache / expected["sha256"]
        with open(cache / (expected["sha256"] + LOCK_SUFFIX), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            found = held(cached, expected)
            if found == kept(expected):
                os.utime(cached)  # used: kept KEEP_DAYS more
                print(f"{expected['name']}: from the host cache, {expected['size']} bytes", flush=True)
            else:
                if found is not None:
                    print(f"{expected['name']}: the host cache held {found}, not the {kept(expected)} the relay "
                          "kept: fetched again", flush=True)
                    remove(cached)
                started = time.monotonic()
                download(url + urllib.parse.quote(expected["name"]), token, expected, cached)
                print(f"{expected['name']}: downloaded, {expected['size']} bytes in "
                      f"{time.monotonic() - started:.1f} s", flush=True)
            place(cached, destination / expected["name"])
    forget_unused(cache, time.time())


def main(argv: list[str]) -> int:
    cache, destination, groups = Path(argv[1]), Path(argv[2]), json.loads(argv[3])
    try:
        fetch(cache, destination, groups, sys.stdin.readline().strip())
    except FetchFailed as e:
        print(f"fetching the artifacts failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
