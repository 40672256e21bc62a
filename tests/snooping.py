"""A hostile upstream test, as a pull request from anyone could add: it takes what a build on a worker can see.

`hostile_test_file(report)` is the text of such a test file (this module's own source and a test calling
`snoop`): run by a build, it writes to `report` (an absolute path) and prints as JSON
- the build's whole environment,
- every file under the worker's base folder (the first folder above the build's containing buildbot.tac),
  with its contents,
- the environment and command line of each process above the build (the worker itself among them), as
  /proc shows them to the worker's user.
It imports only the standard library: the worker has nothing else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

READ_LIMIT = 1 << 20  # bytes of each file: enough for any secret, not enough to fill the report with blobs


def _text(path: Path) -> str:
    with open(path, "rb") as f:
        return f.read(READ_LIMIT).decode("utf-8", "replace")


def worker_dir(start: Path) -> Path | None:
    """The worker's base folder: the nearest folder at or above `start` holding buildbot.tac."""
    return next((d for d in [start, *start.parents] if (d / "buildbot.tac").is_file()), None)


def folder_contents(root: Path) -> dict[str, str]:
    """Every readable file under `root` (.git included: a fetched URL with credentials would be in its config)."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            try:
                found[str(path.relative_to(root))] = _text(path)
            except OSError as e:  # sockets, files the user may not read
                found[str(path.relative_to(root))] = f"<unreadable: {e.strerror}>"
    return found


def ancestors() -> dict[int, dict[str, str]]:
    """The initial environment and command line of each process above this one: unsetting a variable
    (os.environ.pop) leaves it in the process's /proc/PID/environ, which its user's other processes can read."""
    seen = {}
    pid = os.getppid()
    while pid > 1 and pid not in seen:
        proc = Path("/proc", str(pid))
        try:
            seen[pid] = {"environ": _text(proc / "environ"), "cmdline": _text(proc / "cmdline")}
            pid = int(_text(proc / "stat").rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return seen


def snoop(report: Path) -> dict:
    """What this process can find: written to `report` and printed."""
    base = worker_dir(Path.cwd())
    found = {
        "cwd": str(Path.cwd()),
        "environ": dict(os.environ),
        "worker_dir": str(base) if base else None,
        "worker_files": folder_contents(base) if base else {},
        "ancestors": ancestors(),
    }
    text = json.dumps(found, indent=1)
    report.write_text(text)
    print(text)
    return found


def hostile_test_file(report: Path) -> str:
    """The text of an upstream test file that snoops (see the module's docstring) and reports to `report`."""
    return (
        Path(__file__).read_text(encoding="utf-8")
        + "\n\ndef test_nothing_to_see_here():\n"
        + f"    snoop(Path({str(report)!r}))\n"
    )
