"""What a host admin runs on a registered host by hand (`crcr worker register/show --by-hand`): create one Buildbot
worker per unit, run them under systemd. These paragraphs are what crcr's host tool does in one command,
`crcr-host up` (cli/hostup.py prints it by default).

The text is paragraphs of commands, each headed by a `#` line saying who runs it, so each pastes whole into a
shell. The host's password reaches the host only as standard input (a here-document), never as a command's
argument, where `ps` would show it: it goes into one file that only root reads, outside the workers' folders.
systemd opens that file for each unit (as root) and hands it over as the unit's standard input, which
buildbot.tac reads when the unit starts. So builds, which run the code of any upstream commit or pull request
as the workers' account, find the password in no file they may read and in no environment: not in their own,
nor in the worker's (a variable the worker unset would still show in its /proc/PID/environ).
A new password is then a new file and a restart.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import PurePosixPath

from crcr.config.errors import PATTERN_HELP, ConfigError
from crcr.config.limits import MISSED_KEEPALIVES
from crcr.config.workers import HOST_PATH, WorkerHost
from crcr.shipped import crcr_host
from crcr.shipped.crcr_host import systemd_unit

# The host tool's own: the setup by hand is what it does (its unit, its buildbot.tac, its reconnect delay).
SYSTEMD_UNIT_NAME = crcr_host.SYSTEMD_UNIT
MAX_RECONNECT_DELAY = crcr_host.MAX_RECONNECT_DELAY
PASSWORD_PLACEHOLDER = crcr_host.PLACEHOLDER  # what create-worker is given; the printed sed replaces it
TAC_PASSWORD = crcr_host.TAC_PASSWORD
# Where the workers live and who runs builds, by hand and as root with the host tool.
DEFAULT_HOST_DIR = crcr_host.ROOT_HOST_DIR
DEFAULT_HOST_USER = crcr_host.ROOT_HOST_USER
DEFAULT_PASSWORD_FILE = "/etc/crcr-worker/password"
HEREDOC_END = "END"

# The account and the directory are written into a systemd unit and into shell commands. Rather than quote
# them for both (systemd reads '%' as a specifier, a newline starts a new directive), refuse what needs quoting.
HOST_USER = crcr_host.ACCOUNT


def check_host_user(user: str) -> None:
    if not HOST_USER.fullmatch(user):
        raise ConfigError(
            "--host-user: must be a POSIX account name: lowercase letters, digits, '_' and '-', starting with a "
            f"letter or '_', at most 32 characters (got {user!r})"
        )
    if user == "root":
        raise ConfigError(
            "--host-user: builds run code from anyone who can push upstream or open a pull request, and as root they "
            f"would own the host and read its password; give an unprivileged account (got {user!r})"
        )


def check_host_dir(directory: str, option: str = "--host-dir") -> None:
    if not re.fullmatch(HOST_PATH, directory):
        raise ConfigError(f"{option}: {PATTERN_HELP[HOST_PATH]} (got {directory!r})")


def read_password_from_stdin(tac: str) -> str:
    """buildbot.tac's text with its password line replaced by TAC_PASSWORD (what the printed sed does)."""
    return re.sub(r"^passwd = .*$", lambda _: TAC_PASSWORD, tac, count=1, flags=re.MULTILINE)


@dataclass(frozen=True)
class HostSetup:
    host: WorkerHost
    password: str
    master_address: str  # host:port of the master's worker port
    keepalive: int  # seconds; the master drops a host that misses three
    host_dir: PurePosixPath  # on the host: the venv and one directory per unit
    host_user: str
    password_file: PurePosixPath  # on the host, root's alone
    # {device kind: its identify command} (hostup.identify_commands): each unit's card, as `crcr-host up` names it.
    identify: dict[str, str] = field(default_factory=dict)

    @property
    def worker_version(self) -> str:
        # The master's own buildbot-worker pin: workers and master speak the same protocol version.
        return version("buildbot-worker")

    @property
    def venv(self) -> PurePosixPath:
        return self.host_dir / "venv"

    def unit_dir(self, worker_name: str) -> PurePosixPath:
        return self.host_dir / worker_name

    def _tacs(self) -> list[str]:
        return [str(self.unit_dir(unit.worker_name) / "buildbot.tac") for unit in self.host.units]

    def _write_password_file(self) -> list[str]:
        """The password as a here-document: standard input of `install` (run by root), mode 0600 from the start."""
        return [f"install -D -m 600 /dev/stdin {self.password_file} <<'{HEREDOC_END}'", self.password, HEREDOC_END]

    def create_commands(self) -> list[str]:
        """Per unit: the worker (its buildbot.tac remade, so the commands can run again), its password read from
        standard input, what the UI's Workers page shows as its admin and host, and its card (info/card, from its
        device's identify command: a failing one says so rather than stopping the setup)."""
        tacs = self._tacs()
        creates = [
            shlex.join(
                [
                    f"{self.venv}/bin/buildbot-worker", "create-worker", "--quiet",
                    "--keepalive", str(self.keepalive),
                    "--maxdelay", str(MAX_RECONNECT_DELAY),
                    str(self.unit_dir(unit.worker_name)),
                    self.master_address,
                    unit.worker_name,
                    PASSWORD_PLACEHOLDER,
                ]
            )
            for unit in self.host.units
        ]
        infos = [
            f"echo {shlex.quote(text)} > {self.unit_dir(unit.worker_name) / 'info' / name}"
            for unit in self.host.units
            for name, text in (
                ("admin", self.host.admin),
                ("host", f"{self.host.name}: {unit.device} unit {unit.index}"),
            )
        ]
        cards = [
            f"CRCR_DEVICE_INDEX={unit.index} sh -c {shlex.quote(self.identify[unit.device])} > {card} "
            f"|| echo 'not identified: its identify command failed' > {card}"
            for unit in self.host.units if unit.device in self.identify
            for card in [self.unit_dir(unit.worker_name) / "info" / "card"]
        ]
        return [
            shlex.join(["rm", "-f", *tacs]),
            *creates,
            shlex.join(["sed", "-i", f"s|^passwd = .*|{TAC_PASSWORD}|", *tacs]),
            *infos,
            *cards,
        ]

    def systemd_unit(self) -> str:
        return systemd_unit(self.host_user, str(self.host_dir), str(self.venv), str(self.password_file))

    def instructions(self, unit_file: str | None = None) -> str:
        """The text `crcr worker register` prints: every command, in order, ready to paste."""
        names = [u.worker_name for u in self.host.units]
        unit_path = f"/etc/systemd/system/{SYSTEMD_UNIT_NAME}"
        if unit_file:
            unit_step = [f"# As root: copy {unit_file} (written just now) to {unit_path}, then run the units"]
        else:
            unit_step = [
                "# As root: the systemd unit of the workers (or pass --systemd-unit FILE), then run them as services",
                f"cat > {unit_path} <<'{HEREDOC_END}'",
                *self.systemd_unit().splitlines(),
                HEREDOC_END,
            ]
        paragraphs = [
            [
                f"# On {self.host.name}, as root: the account that runs builds (if it does not exist)",
                f"useradd --system --create-home --home-dir {self.host_dir} {self.host_user}",
            ],
            [
                f"# As that account (sudo -iu {self.host_user}): buildbot-worker {self.worker_version} in a venv",
                f"python3 -m venv {self.venv}",
                f"{self.venv}/bin/pip install buildbot-worker=={self.worker_version}",
            ],
            [
                f"# Still as that account: one Buildbot worker per device unit ({len(names)} in all; each runs one "
                "build at a time)",
                *self.create_commands(),
            ],
            self._password_paragraph(),
            [
                *unit_step,
                "systemctl daemon-reload",
                "systemctl enable --now " + " ".join(f"crcr-worker@{n}" for n in names),
            ],
            [
                f"# Each unit worker sends a keepalive every {self.keepalive}s; the master drops one silent for "
                f"{MISSED_KEEPALIVES * self.keepalive}s and retries its build when a unit is back.",
            ],
        ]
        return "\n\n".join("\n".join(lines) for lines in paragraphs)

    def _password_paragraph(self) -> list[str]:
        return [
            f"# As root: the host's password in {self.password_file}, readable by root only; systemd hands it to "
            "each unit",
            "# on standard input when the unit starts, so no build finds it in the account's files",
            *self._write_password_file(),
        ]

    def rotation_instructions(self) -> str:
        """After a new password: replace the host's password file, restart the units (each reads it at start)."""
        names = [u.worker_name for u in self.host.units]
        return "\n\n".join(
            [
                "\n".join(
                    [
                        f"# On {self.host.name}, as root: the new password in place of the old",
                        *self._write_password_file(),
                    ]
                ),
                "\n".join(
                    [
                        "# As root: restart the units; each reads the password file when it starts",
                        "systemctl restart " + " ".join(f"crcr-worker@{n}" for n in names),
                    ]
                ),
            ]
        )
