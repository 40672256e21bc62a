"""What a host admin runs on a registered host: create one Buildbot worker per unit, run them under systemd."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import PurePosixPath

from crcr.buildmaster.liveness import MISSED_KEEPALIVES
from crcr.config.models import WorkerHost

SYSTEMD_UNIT_NAME = "crcr-worker@.service"
# Reconnect within a minute after a master restart (buildbot-worker's default is five).
MAX_RECONNECT_DELAY = 60


@dataclass(frozen=True)
class HostSetup:
    host: WorkerHost
    password: str
    master_address: str  # host:port of the master's worker port
    keepalive: int  # seconds; the master drops a host that misses three
    host_dir: PurePosixPath  # on the host: the venv and one directory per unit
    host_user: str

    @property
    def worker_version(self) -> str:
        # The master's own buildbot-worker pin: workers and master speak the same protocol version.
        return version("buildbot-worker")

    @property
    def venv(self) -> PurePosixPath:
        return self.host_dir / "venv"

    def unit_dir(self, worker_name: str) -> PurePosixPath:
        return self.host_dir / worker_name

    def create_commands(self) -> list[str]:
        """Per unit: create the worker, and fill in what the UI's Workers page shows as its admin and host."""
        commands = []
        for unit in self.host.units:
            unit_dir = str(self.unit_dir(unit.worker_name))
            create = shlex.join(
                [
                    f"{self.venv}/bin/buildbot-worker", "create-worker",
                    "--keepalive", str(self.keepalive),
                    "--maxdelay", str(MAX_RECONNECT_DELAY),
                    unit_dir,
                    self.master_address,
                    unit.worker_name,
                    self.password,
                ]
            )
            info = {"admin": self.host.admin, "host": f"{self.host.name}: {unit.device} unit {unit.index}"}
            writes = [f"echo {shlex.quote(text)} > {shlex.quote(f'{unit_dir}/info/{name}')}" for name, text in info.items()]
            commands.append(" && ".join([create, *writes]))
        return commands

    def systemd_unit(self) -> str:
        return f"""\
# {SYSTEMD_UNIT_NAME}: one instance per accelerator unit, named after its worker (e.g. {self.host.units[0].worker_name}).
[Unit]
Description=crcr relay worker %i
Wants=network-online.target
After=network-online.target

[Service]
User={self.host_user}
WorkingDirectory={self.host_dir}/%i
ExecStart={self.venv}/bin/buildbot-worker start --nodaemon {self.host_dir}/%i
Restart=always
RestartSec=10
# Stopping the worker stops its build's processes too, so none is left holding the device.
KillMode=control-group

[Install]
WantedBy=multi-user.target
"""

    def instructions(self, unit_file: str | None = None) -> str:
        """The text `crcr worker register` prints: every command, in order, ready to paste."""
        names = [u.worker_name for u in self.host.units]
        q = shlex.quote
        if unit_file:
            unit_step = f"copy {unit_file} (written just now) to /etc/systemd/system/{SYSTEMD_UNIT_NAME}:"
            unit_text = []
        else:
            unit_step = f"save this as /etc/systemd/system/{SYSTEMD_UNIT_NAME} (or pass --systemd-unit FILE):"
            unit_text = [*_indent(self.systemd_unit().splitlines()), ""]
        return "\n".join(
            [
                f"On {self.host.name}, as root, create the account that runs builds (if it does not exist):",
                *_indent([f"useradd --system --create-home --home-dir {q(str(self.host_dir))} {q(self.host_user)}"]),
                "",
                f"As that account (sudo -iu {q(self.host_user)}), install buildbot-worker {self.worker_version} and create "
                f"one Buildbot worker per device unit ({len(names)} in all; each runs one build at a time):",
                *_indent(
                    [
                        f"python3 -m venv {q(str(self.venv))}",
                        f"{q(str(self.venv))}/bin/pip install buildbot-worker=={self.worker_version}",
                        *self.create_commands(),
                    ]
                ),
                "",
                "As root, run them as services: " + unit_step,
                "",
                *unit_text,
                *_indent(["systemctl daemon-reload", "systemctl enable --now " + " ".join(f"crcr-worker@{n}" for n in names)]),
                "",
                f"Each unit worker sends a keepalive every {self.keepalive}s; the master drops one silent for "
                f"{MISSED_KEEPALIVES * self.keepalive}s and retries its build when a unit is back.",
            ]
        )

    def rotation_instructions(self) -> str:
        """After a new password: remake each unit's buildbot.tac (create-worker would only write a
        buildbot.tac.new beside an existing one) and restart the units."""
        names = [u.worker_name for u in self.host.units]
        remake = [
            f"rm {shlex.quote(str(self.unit_dir(name)))}/buildbot.tac && {command}"
            for name, command in zip(names, self.create_commands())
        ]
        return "\n".join(
            [
                f"As the account that runs builds (sudo -iu {shlex.quote(self.host_user)}):",
                *_indent(remake),
                "",
                "As root:",
                *_indent(["systemctl restart " + " ".join(f"crcr-worker@{n}" for n in names)]),
            ]
        )


def _indent(lines: list[str]) -> list[str]:
    return [f"    {line}" if line else "" for line in lines]
