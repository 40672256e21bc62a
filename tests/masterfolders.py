"""Stand-ins for running crcr masters: master folders as `crcr master start` makes them, each with a real process
working in it, as a twistd master works in its folder (what `crcr.cli.mastercontrol.running_basedirs` looks for)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from crcr.cli.mastercontrol import MASTER_CFG


def master_folder(path: Path, configfile: Path = MASTER_CFG) -> Path:
    """A folder as `crcr master start` makes it: its buildbot.tac names the master.cfg it runs."""
    path.mkdir(parents=True)
    (path / "buildbot.tac").write_text(f"import os\nbasedir = {str(path)!r}\nconfigfile = {str(configfile)!r}\n")
    return path


@pytest.fixture
def process_in():
    """Starts a process whose working directory is a folder, as twistd runs in its master's; stops them all."""
    started = []

    def start(folder: Path, workers_dir: Path, pid_file: bool = True) -> subprocess.Popen:
        """`workers_dir`: the host files the master reads (its CRCR_WORKERS_DIR)."""
        process = subprocess.Popen(["sleep", "600"], cwd=folder, env={**os.environ, "CRCR_WORKERS_DIR": str(workers_dir)})
        started.append(process)
        if pid_file:
            (folder / "twistd.pid").write_text(f"{process.pid}\n")
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()
