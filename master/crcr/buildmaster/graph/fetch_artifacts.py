"""Fetches a build stage's artifacts onto a unit, through its host's cache: shipped into a suite child's build folder
and run there with the host's python3, so the standard library only (artifacts.py runs it).

    python3 fetch_artifacts.py CACHE DEST GROUPS      (the token in $CRCR_ARTIFACTS_TOKEN)

CACHE: the host's cache, shared by its units; DEST: the build folder's artifacts folder, emptied, then given each
file (a hard link to the cached copy); GROUPS: JSON, a list of {url, files}, each the artifacts of one build: where
the relay serves them (+ a file name), and a list of {name, size, sha256}.

A file is cached under its SHA-256, written to a temporary file, checked and renamed into place, so a cached file is
always whole. The units of a host fetch one file in turn under a lock of its own: the first downloads it, the others
find it cached. Files no build asked for in KEEP_DAYS are removed from the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
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
            if (size, digest.hexdigest()) != (expected["size"], expected["sha256"]):
                raise FetchFailed(f"{expected['name']}: got {size} bytes of SHA-256 {digest.hexdigest()}, not the "
                                  f"{expected['size']} bytes of SHA-256 {expected['sha256']} the relay kept")
            os.chmod(part.name, 0o444)  # the units share it: a suite must not change it under another
            os.replace(part.name, cached)
        except urllib.error.HTTPError as e:
            raise FetchFailed(f"{expected['name']}: the relay answered {e.code}: "
                              f"{e.read().decode(errors='replace').strip()}") from None
        except OSError as e:
            raise FetchFailed(f"{expected['name']}: {url}: {e}") from None
        finally:
            if os.path.exists(part.name):
                os.unlink(part.name)


def place(cached: Path, destination: Path) -> None:
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
            if entry.exists() and entry.stat().st_mtime < now - KEEP_DAYS * 86400:
                entry.unlink()


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
            if cached.exists():
                os.utime(cached)  # used: kept KEEP_DAYS more
                print(f"{expected['name']}: from the host cache, {expected['size']} bytes", flush=True)
            else:
                started = time.monotonic()
                download(url + urllib.parse.quote(expected["name"]), token, expected, cached)
                print(f"{expected['name']}: downloaded, {expected['size']} bytes in "
                      f"{time.monotonic() - started:.1f} s", flush=True)
            place(cached, destination / expected["name"])
    forget_unused(cache, time.time())


def main(argv: list[str]) -> int:
    cache, destination, groups = Path(argv[1]), Path(argv[2]), json.loads(argv[3])
    try:
        fetch(cache, destination, groups, os.environ["CRCR_ARTIFACTS_TOKEN"])
    except FetchFailed as e:
        print(f"fetching the artifacts failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
