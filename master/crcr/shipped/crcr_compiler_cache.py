"""A build's compiler cache on its host (`compiler_cache:` of a build, docs/backends.md): shipped into the build
folder and run there with the host's python3, so the standard library only.

    python3 crcr_compiler_cache.py wrap KIND BINDIR       before the build's steps
    python3 crcr_compiler_cache.py figures KIND           after them: one line of JSON, {kind, hits, misses}

`wrap` writes into BINDIR, which the build's PATH puts first, a wrapper per compiler the host has (cc, gcc, c++,
g++, clang, clang++), each running the real compiler through the cache: what CMake, setuptools and make all find,
where a launcher variable reaches CMake alone (PyTorch's own CI wraps its compilers so). With sccache it starts the
build's own server (on the socket SCCACHE_SERVER_UDS names), whose figures are then the build's alone. The cache's
place, size cap, base folder and remote storage come in the environment the relay gives the build (CCACHE_* or
SCCACHE_*); a ccache build's figures are read from its own stats log (CCACHE_STATSLOG), which `wrap` empties.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

COMPILERS = ("cc", "gcc", "c++", "g++", "clang", "clang++")
KINDS = ("ccache", "sccache")


class CacheFailed(Exception):
    pass


def tool(kind: str) -> str:
    found = shutil.which(kind)
    if found is None:
        raise CacheFailed(f"{kind} is not on this unit's PATH ({os.environ.get('PATH', '')}): crcr-host up "
                          f"installs it (--compiler-cache {kind}), or install it on the host")
    return found


def wrap(kind: str, bindir: str) -> str:
    """Writes the wrappers; says what it wrapped."""
    cache_tool = tool(kind)
    os.makedirs(bindir, exist_ok=True)
    beyond = os.pathsep.join(entry for entry in os.environ.get("PATH", "").split(os.pathsep)
                             if os.path.realpath(entry) != os.path.realpath(bindir))
    wrapped = []
    for name in COMPILERS:
        real = shutil.which(name, path=beyond)
        if real is None:
            continue
        wrapper = os.path.join(bindir, name)
        with open(wrapper + ".part", "w") as f:
            f.write(f'#!/bin/sh\nexec "{cache_tool}" "{real}" "$@"\n')
        os.chmod(wrapper + ".part", 0o755)
        os.replace(wrapper + ".part", wrapper)
        wrapped.append(name)
    if not wrapped:
        raise CacheFailed(f"no compiler ({', '.join(COMPILERS)}) on this unit's PATH")
    if kind == "ccache":
        log = os.environ.get("CCACHE_STATSLOG")
        if log and os.path.exists(log):
            os.unlink(log)  # the figures are this build's
    else:
        subprocess.run([cache_tool, "--stop-server"], capture_output=True)  # a server left by a stopped build
        started = subprocess.run([cache_tool, "--start-server"], capture_output=True, text=True)
        if started.returncode != 0:
            raise CacheFailed(f"sccache --start-server failed: {started.stderr.strip() or started.stdout.strip()}")
    version = subprocess.run([cache_tool, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return f"{version.strip()} wraps {', '.join(wrapped)}; cache {cache_folder(kind)}"


def cache_folder(kind: str) -> str:
    return os.environ.get("CCACHE_DIR" if kind == "ccache" else "SCCACHE_DIR", "(the tool's default)")


def figures(kind: str) -> dict:
    """This build's hits and misses."""
    if kind == "ccache":
        return {"kind": kind, **ccache_log_figures(os.environ.get("CCACHE_STATSLOG", ""))}
    cache_tool = tool(kind)
    shown = subprocess.run([cache_tool, "--show-stats", "--stats-format", "json"], capture_output=True, text=True)
    subprocess.run([cache_tool, "--stop-server"], capture_output=True)
    stats = json.loads(shown.stdout)["stats"]
    return {"kind": kind, "hits": sum(stats["cache_hits"]["counts"].values()),
            "misses": sum(stats["cache_misses"]["counts"].values())}


def ccache_log_figures(log: str) -> dict:
    """The hits and misses a ccache stats log counts: a `# <source>` line per compile, then a line per counter it
    moved. Read here, not by `ccache --print-log-stats --format=json`, which ccache 4.7 (Debian 12's) lacks."""
    counted = {"direct_cache_hit": 0, "preprocessed_cache_hit": 0, "cache_miss": 0}
    if os.path.exists(log):  # none: nothing was compiled
        with open(log) as f:
            for line in f:
                if line.strip() in counted:
                    counted[line.strip()] += 1
    return {"hits": counted["direct_cache_hit"] + counted["preprocessed_cache_hit"], "misses": counted["cache_miss"]}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("wrap", "figures") or argv[1] not in KINDS or len(argv) != (
            3 if argv[0] == "wrap" else 2):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        if argv[0] == "wrap":
            print(f"compiler cache: {wrap(argv[1], argv[2])}")
        else:
            print(json.dumps(figures(argv[1])))
    except (CacheFailed, OSError, ValueError, KeyError) as e:
        print(f"crcr: compiler cache: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
