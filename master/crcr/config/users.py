"""The users file: who may sign in to a relay in `auth: users` mode, with scrypt-hashed passwords.

<secrets_dir>/users, mode 0600, one line per user:  name:scrypt$<n>$<r>$<p>$<salt base64>$<hash base64>
Names follow the GitHub login pattern, so that the same name can be an admin or a maintainer in the relay's files.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from crcr.config.errors import ConfigError
from crcr.config.fields import GITHUB_LOGIN
from crcr.config.paths import display_path
from crcr.config.readfiles import MIB, read_text
from crcr.config.writefiles import write_atomically

USERS_FILE = "users"
SCHEME = "scrypt"
# The scrypt paper's parameters for interactive logins (Django's default too): 16 MiB and well under 100 ms per
# hash, paid at each sign-in, and by an attacker for each guess.
N, R, P = 2**14, 8, 1
SALT_BYTES = 16
HASH_BYTES = 32
# A hand-edited file's parameters are bounded, so a line cannot make each sign-in take minutes or gigabytes.
MAX_N, MAX_R, MAX_P = 2**20, 32, 16
MAX_MEMORY = 256 * MIB
USERS_LIMIT = 4 * MIB
MAX_PASSWORD = 1024

_LINE = re.compile(
    r"^(?P<name>[^:]*):(?P<scheme>[^$]*)\$(?P<n>\d+)\$(?P<r>\d+)\$(?P<p>\d+)\$(?P<salt>[^$]*)\$(?P<hash>[^$]*)$"
)


def users_file(secrets_dir: Path) -> Path:
    return secrets_dir / USERS_FILE


def check_name(name: str) -> str:
    """The name if it can sign in and be named in the relay's files; ConfigError otherwise."""
    if not re.match(GITHUB_LOGIN, name):
        raise ConfigError(
            f"user name {name!r}: must be a GitHub login: letters, digits and '-', starting with a letter or digit, "
            "at most 39 characters"
        )
    return name


def check_password(password: str) -> str:
    if not password:
        raise ConfigError("the password is empty")
    if len(password) > MAX_PASSWORD:
        raise ConfigError(f"the password is longer than {MAX_PASSWORD} characters")
    if "\n" in password or "\r" in password:
        raise ConfigError("the password has a line break")
    return password


def read_users(path: Path) -> dict[str, str]:
    """Each user's name and hash line; {} when the file does not exist. ConfigError naming the file and line."""
    if not path.exists():
        return {}
    users: dict[str, str] = {}
    for number, line in enumerate(read_text(path, USERS_LIMIT).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{display_path(path)}, line {number}"
        problem = _line_problem(line)
        if problem:
            raise ConfigError(f"{where}: {problem}; expected name:scrypt$N$r$p$salt$hash as `crcr user add` writes")
        name, hashed = line.split(":", 1)
        if name in users:
            raise ConfigError(f"{where}: user {name!r} appears twice")
        users[name] = hashed
    return users


def add_user(path: Path, name: str, password: str) -> bool:
    """Create or replace the user `name`; True when it is new. The file is rewritten whole, mode 0600."""
    check_name(name)
    check_password(password)
    users = read_users(path)
    is_new = name not in users
    users[name] = hash_password(password)
    _write(path, users)
    return is_new


def remove_user(path: Path, name: str) -> None:
    users = read_users(path)
    if name not in users:
        raise ConfigError(f"{display_path(path)}: no user {name!r}")
    del users[name]
    _write(path, users)


def verify(users: Path | Mapping[str, str], name: str, password: str) -> bool:
    """True when `name` is a user whose password is `password`. The users file is read if a path is given."""
    if not isinstance(users, Mapping):
        users = read_users(users)
    hashed = users.get(name)
    if hashed is None or not password or len(password) > MAX_PASSWORD:
        # Hash anyway: answering an unknown name faster would tell who the users are.
        hash_password(password[:MAX_PASSWORD] or "-")
        return False
    scheme, n, r, p, salt, expected = hashed.split("$")
    got = _scrypt(password, _b64(salt), int(n), int(r), int(p), len(_b64(expected)))
    return hmac.compare_digest(got, _b64(expected))


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, N, R, P, HASH_BYTES)
    return "$".join([SCHEME, str(N), str(R), str(P), _text(salt), _text(digest)])


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, length: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=MAX_MEMORY, dklen=length)


def _line_problem(line: str) -> str | None:
    match = _LINE.match(line)
    if match is None:
        return "not a user line" if ":" not in line else "the password hash is not in the expected form"
    if not re.match(GITHUB_LOGIN, match["name"]):
        return f"user name {match['name']!r} is not a GitHub login"
    if match["scheme"] != SCHEME:
        return f"unknown hash scheme {match['scheme']!r} (only {SCHEME})"
    n, r, p = int(match["n"]), int(match["r"]), int(match["p"])
    if n < 2 or n > MAX_N or n & (n - 1):
        return f"scrypt N must be a power of 2 up to {MAX_N}, got {n}"
    if not 1 <= r <= MAX_R or not 1 <= p <= MAX_P or 128 * r * (n + p + 2) > MAX_MEMORY:
        return f"scrypt parameters r={r}, p={p} are out of range"
    try:
        salt, digest = _b64(match["salt"]), _b64(match["hash"])
    except (binascii.Error, ValueError):
        return "the salt or the hash is not base64"
    if not salt or not digest:
        return "the salt or the hash is empty"
    return None


def _write(path: Path, users: Mapping[str, str]) -> None:
    """Whole, by rename: the master reading it at a sign-in never sees half a file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomically(path, "".join(f"{name}:{hashed}\n" for name, hashed in sorted(users.items())), mode=0o600)


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)
