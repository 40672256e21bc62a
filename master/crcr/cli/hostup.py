"""What `crcr worker register` and `show` print by default: fetch crcr's host tool from the relay, then its one
command, `crcr-host up`, which creates, keys and starts every unit worker of the host (the paragraphs of
cli/hostsetup.py, printed with --by-hand, are what it does).

A device of the host whose file (workers/devices/<kind>.yaml) has an `identify:` command gets it in the command
(`--identify KIND=COMMAND`): the relay's file stays its one source, the host asks the relay for nothing more, and
the `up` printed again after the file changed brings the change to the host. Likewise the compiler caches
(`--compiler-cache KIND`) the relay's builds on its devices compile through (`compiler_cache:` of a shared build or
a build stage), when they are other than the tool's default, ccache.

The host's password reaches the tool as the first line of its standard input, a here-document, never as an
argument, where `ps` would show it. Where the workers live and which account runs builds are the tool's to choose
for whoever runs it (root with systemd, or oneself for a trial), so the command
carries them only when the relay's admin gave them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from crcr.cli.hostsetup import DEFAULT_HOST_USER, HEREDOC_END
from crcr.config.loader import DEVICES_DIR, RelayConfig, load_model
from crcr.config.workers import BUILD_ENV_WORKER, Device, WorkerHost
from crcr.names import HOST_TOOL_PATH
from crcr.shipped import crcr_host

TOOL_FILE = "crcr-host"  # what the printed curl saves the tool as, on the host


@dataclass(frozen=True)
class HostUp:
    host: WorkerHost
    password: str
    master_address: str  # host:port of the master's worker port
    web_url: str  # the relay's web address, ending in '/': where the tool is fetched from
    # Each None unless given to register or show: the tool then chooses it.
    host_dir: str | None = None
    host_user: str | None = None
    identify: dict[str, str] = field(default_factory=dict)  # {device kind: its identify command} (identify_commands)
    compiler_caches: list[str] = field(default_factory=list)  # the kinds its builds compile through (compiler_caches)

    def up_arguments(self) -> list[str]:
        """The `up` command as the host's shell hands it to the tool."""
        arguments = ["python3", TOOL_FILE, "up", "--master", self.master_address, "--name", self.host.name]
        for device, count in self.host.devices.items():
            arguments += ["--device", f"{device}:{count}"]
        arguments += ["--admin", self.host.admin]
        if self.host.build_env != BUILD_ENV_WORKER:
            arguments += ["--build-env", self.host.build_env]
        for device, command in self.identify.items():
            arguments += ["--identify", f"{device}={command}"]
        if self.compiler_caches and self.compiler_caches != [crcr_host.DEFAULT_COMPILER_CACHE]:
            arguments += [word for kind in self.compiler_caches for word in ("--compiler-cache", kind)]
        return arguments + self._given("--host-dir", "--host-user")

    def _given(self, *options: str) -> list[str]:
        values = {"--host-dir": self.host_dir, "--host-user": self.host_user}
        return [word for option in options if values[option] is not None for word in (option, values[option])]

    def instructions(self) -> str:
        """Fetch the tool, run `up` with the password on its standard input; how to run it again, and its other
        commands."""
        account = self.host_user or DEFAULT_HOST_USER
        return "\n".join([
            f"# On {self.host.name}: crcr's host tool, served by the relay (one Python file; needs python3 3.9 or "
            "later with venv, and git)",
            shlex.join(["curl", "-fsSo", TOOL_FILE, self.web_url + HOST_TOOL_PATH]),
            f"# As root on a host with systemd (production: builds run as the account {account} and cannot read the "
            "password),",
            "# or as yourself for a trial (your builds can read the password): create, key and start the units",
            f"{shlex.join(self.up_arguments())} <<'{HEREDOC_END}'",
            self.password,
            HEREDOC_END,
            "# Run it again at any time (after --rotate-password, a changed unit count): it changes only what differs.",
            " ".join([f"# python3 {TOOL_FILE} status | stop | down", *self._given("--host-dir")]),
        ])


def identify_commands(workers_dir: Path, host: WorkerHost) -> dict[str, str]:
    """{device kind: its identify command} for each of the host's device kinds whose file has one."""
    files = {device: workers_dir / DEVICES_DIR / f"{device}.yaml" for device in host.devices}
    devices = {device: load_model(path, Device) for device, path in files.items() if path.exists()}
    return {name: device.identify for name, device in devices.items() if device.identify}


def compiler_caches(relay: RelayConfig, host: WorkerHost) -> list[str]:
    """The compiler caches of the relay's builds made on the host's devices (every backend's, active or not yet: the
    host may be what makes one active), by name."""
    stages = [*((shared, shared.device) for shared in relay.shared_builds.values()),
              *((backend.build, backend.build_device) for backend in relay.backends if backend.build)]
    return sorted({stage.compiler_cache.kind for stage, device in stages
                   if stage.compiler_cache and device in host.devices})
