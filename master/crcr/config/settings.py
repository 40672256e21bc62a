"""Relay settings: committed defaults in master/settings.yaml, each overridable by a CRCR_* variable."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, WrapValidator, field_validator
from pydantic_core import PydanticCustomError

from crcr.config.errors import ConfigError, describe_validation_error, described_limit, described_pattern
from crcr.config.fields import GITHUB_LOGIN, BranchNames, check_branch_names
from crcr.config.limits import (
    MAX_ADDRESS,
    MAX_FILESYSTEM_PATH,
    MAX_GITHUB_REPO,
    MAX_KEEPALIVE,
    MAX_MAINTAINERS,
    MAX_POLL_INTERVAL,
    MAX_URL,
)
from crcr.config.paths import REPO_ROOT
from crcr.config.yamlfiles import read_yaml_mapping

DEFAULTS_FILE = REPO_ROOT / "master" / "settings.yaml"
# The health pages' longest range is 30 days: a shorter history would leave its first day half pruned.
MIN_HISTORY_DAYS = 31
MAX_HISTORY_DAYS = described_limit(3650, "3650 days (10 years)")
MAX_ARTIFACT_MB = described_limit(1_000_000, "1000000 MB (1 TB)")
MAX_PYTORCH_RELAY_RATE = 100  # callbacks a minute per repository: PyTorch's relay refuses more
INTERFACE = r"^[A-Za-z0-9.:-]+$"
# Validation context: the names of the settings whose value is the text of their CRCR_* variable.
FROM_ENVIRONMENT = "from_environment"


def _as_written(kind: type, error: str):
    """A validator taking a value of the settings file only as the YAML type `kind` (a number is not `true`, which
    pydantic would take as 1, nor "60"; a boolean is not "yes"); only a variable's text is parsed as one."""
    def validate(value, parse, info: ValidationInfo):
        from_environment = info.field_name in (info.context or {}).get(FROM_ENVIRONMENT, ())
        if from_environment or (isinstance(value, kind) and isinstance(value, bool) == (kind is bool)):
            return parse(value)
        raise PydanticCustomError(error, "Input should be a valid " + kind.__name__)
    return WrapValidator(validate)


WholeNumber = Annotated[int, _as_written(int, "int_type")]
Flag = Annotated[bool, _as_written(bool, "bool_type")]


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    upstream_url: str = Field(min_length=1, max_length=MAX_URL)
    upstream_branches: BranchNames
    poll_interval: WholeNumber = Field(ge=1, le=MAX_POLL_INTERVAL)
    github_api_url: str = Field(
        pattern=described_pattern(r"^https?://", "must start with http:// or https://"), max_length=MAX_URL
    )
    github_repo: str = Field(
        pattern=described_pattern(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", "must be <owner>/<repository>, e.g. pytorch/pytorch"),
        max_length=MAX_GITHUB_REPO,
    )
    backends_dir: Path
    workers_dir: Path
    secrets_dir: Path
    web_port: WholeNumber = Field(ge=1, le=65535)
    worker_port: WholeNumber = Field(ge=1, le=65535)
    worker_keepalive: WholeNumber = Field(ge=1, le=MAX_KEEPALIVE)
    master_address: str | None = Field(
        default=None,
        pattern=described_pattern(r"^[A-Za-z0-9.\[\]:-]+:[0-9]+$", "must be <host>:<port>, e.g. relay.example.org:9989"),
        max_length=MAX_ADDRESS,
    )
    db_url: str = Field(min_length=1, max_length=MAX_URL)
    buildbot_url: str | None = Field(default=None, max_length=MAX_URL)
    # A copy of PyTorch's .github/allowlist.yml: a backend's level must be within what it grants the backend's repo.
    allowlist: Path | None = None
    # Who signs in: 'users' (the users file in the secrets folder, managed by `crcr user`) or 'github' (GitHub's
    # OAuth, so that people are the GitHub logins the backend files' maintainers name).
    auth: Literal["users", "github"]
    # The relay's admins: GitHub logins, or names in the users file. They may do everything.
    admins: list[Annotated[str, Field(pattern=described_pattern(GITHUB_LOGIN, "must be a GitHub login or user name"))]] = Field(
        default=[], max_length=MAX_MAINTAINERS)
    # Reading the UI and the REST API needs no sign-in unless this is true.
    require_sign_in: Flag
    # The addresses the UI/REST port and the worker port listen on (0.0.0.0 or :: for every interface).
    web_interface: str = Field(pattern=described_pattern(INTERFACE, "must be an IP address or host name"), max_length=MAX_ADDRESS)
    worker_interface: str = Field(pattern=described_pattern(INTERFACE, "must be an IP address or host name"), max_length=MAX_ADDRESS)
    # The GitHub outbox retries a post after outbox_retry_delay seconds, doubling up to outbox_max_delay.
    outbox_retry_delay: WholeNumber = Field(ge=1, le=MAX_KEEPALIVE)
    outbox_max_delay: WholeNumber = Field(ge=1, le=MAX_POLL_INTERVAL)
    # A build still running this long after its backend's timeout is stopped by the relay, and reported.
    timeout_grace: WholeNumber = Field(ge=1, le=MAX_POLL_INTERVAL)
    # The test history, the ledger's decided commits, ended bisections and build logs are kept this many days.
    history_days: WholeNumber = Field(le=MAX_HISTORY_DAYS)
    # The build stages' artifacts (wheels: large) are kept this many days after their build ended, in this folder
    # (relative to the master's directory); several masters: one folder they all mount, since any serves any.
    artifact_days: WholeNumber = Field(default=7, ge=1, le=MAX_HISTORY_DAYS)
    artifact_store: Path = Path("artifacts")
    # A build's artifacts together (MB, 10^6 bytes): more fails the build before the upload, or during it. Any commit
    # with a build stage writes them to the master's disk; a CPU wheel of torch is about 200 MB.
    artifact_max_mb: WholeNumber = Field(default=2000, ge=1, le=MAX_ARTIFACT_MB)
    # Several masters: one silent this long (seconds) counts as dead; another takes over its duties and rebuilds its
    # interrupted builds. Shorter is quicker after a crash, and quicker to count a master dead that is only slow.
    takeover_after: WholeNumber = Field(default=75, ge=10, le=MAX_KEEPALIVE)
    # Several masters: the Crossbar.io router carrying Buildbot's message queue (WAMP), and its realm. Without a
    # router URL the master is alone (Buildbot's in-process queue).
    mq_router_url: str | None = Field(
        default=None, max_length=MAX_URL,
        pattern=described_pattern(r"^wss?://[^\s]+$", "must be a WebSocket URL, e.g. ws://router.internal:8080/ws"))
    # PyTorch's own relay (docs/pytorch-relay.md): where backends with report_to_pytorch post their callbacks, and
    # the command that prints an OIDC token for them (none: no backend may report there).
    pytorch_relay_url: str = Field(
        pattern=described_pattern(r"^https?://\S+/github/callback$", "must be the URL of PyTorch's relay's callback "
                                  "endpoint: http:// or https://, ending in /github/callback"),
        max_length=MAX_URL)
    pytorch_relay_token_command: str | None = Field(default=None, min_length=1, max_length=MAX_URL)
    # Callbacks a minute per downstream repository, spread evenly: that relay refuses over 100 (429), counting its
    # refusals too, and the repository's own CI may report there as well.
    pytorch_relay_rate: WholeNumber = Field(default=60, ge=1)
    # Where the relay sends its e-mail (a unit taken out, to its host's admin: docs/hardware-failures.md), as
    # host:port of an SMTP relay that takes mail from the master unauthenticated; none: no e-mail is sent.
    smtp_relay: str | None = Field(default=None, max_length=MAX_ADDRESS, pattern=described_pattern(
        r"^[A-Za-z0-9.-]+:[0-9]{1,5}$", "must be host:port of an SMTP relay, e.g. smtp.lab.example.com:25"))
    mail_from: str = Field(default="crcr@localhost", max_length=MAX_ADDRESS, pattern=described_pattern(
        r"^[^\s@]+@[^\s@]+$", "must be an e-mail address, e.g. crcr@lab.example.com"))
    # Several build hosts' one compiler cache (docs/lab-admins.md): the HTTP URL of a server taking GET and PUT
    # (nginx with WebDAV), handed to every build with a compiler_cache: ccache's remote storage, sccache's WebDAV
    # endpoint. None: each host keeps its own.
    compiler_cache_remote: str | None = Field(default=None, max_length=MAX_URL, pattern=described_pattern(
        r"^https?://\S+$", "must be an http:// or https:// URL, e.g. http://cache.lab.example.com:8080/ccache"))
    # PyTorch's nightly wheels (backends/builds/torch-nightly.yaml): a PEP 503 index, as `pip --index-url` takes it.
    nightly_index: str = Field(default="https://download.pytorch.org/whl/nightly/cpu", max_length=MAX_URL,
                               pattern=described_pattern(r"^https?://\S+$", "must be an http:// or https:// URL"))
    # PyTorch's disabled tests (docs/backends.md): the condensed list test-infra publishes, asked again every
    # disabled_tests_refresh seconds (a conditional request); "": not followed, no test is skipped for it.
    disabled_tests_url: str = Field(default="", max_length=MAX_URL, pattern=described_pattern(
        r"^(https?://\S+)?$", "must be an http:// or https:// URL, or empty (not followed)"))
    disabled_tests_refresh: WholeNumber = Field(default=1800, ge=1, le=MAX_POLL_INTERVAL)
    mq_realm: str = Field(default="crcr", pattern=described_pattern(r"^[a-z][a-z0-9_.]*$",
                                                                      "must be a WAMP realm name, e.g. crcr"),
                          max_length=MAX_ADDRESS)

    @field_validator("admins", mode="before")
    @classmethod
    def _without_at(cls, logins):
        # As in the backend files' maintainers, @octocat and octocat are the same login.
        return [login.lstrip("@") for login in logins] if isinstance(logins, list) else logins

    @field_validator("outbox_max_delay")
    @classmethod
    def _cap_above_first_delay(cls, cap: int, info: ValidationInfo) -> int:
        first = info.data.get("outbox_retry_delay")
        if first is not None and cap < first:
            raise ValueError(f"must be at least outbox_retry_delay ({first}), got {cap}")
        return cap

    @field_validator("pytorch_relay_rate")
    @classmethod
    def _within_pytorch_relays_limit(cls, rate: int) -> int:
        if rate > MAX_PYTORCH_RELAY_RATE:
            raise ValueError(f"must be at most {MAX_PYTORCH_RELAY_RATE}, the callbacks a minute per repository "
                             f"PyTorch's relay takes (got {rate})")
        return rate

    @field_validator("history_days")
    @classmethod
    def _whole_30_day_range(cls, days: int) -> int:
        if days < MIN_HISTORY_DAYS:
            raise ValueError(
                f"must be at least {MIN_HISTORY_DAYS} days, so that the health pages' 30-day range is whole (got {days})")
        return days

    @field_validator("upstream_branches")
    @classmethod
    def _branch_names(cls, branches: list[str]) -> list[str]:
        return check_branch_names(branches)

    @field_validator("backends_dir", "workers_dir", "secrets_dir", "allowlist", "artifact_store", mode="before")
    @classmethod
    def _usable_path(cls, path):
        # Path("") is ".", which would silently mean the repository root.
        if isinstance(path, str) and not path.strip():
            raise ValueError("must not be empty")
        if isinstance(path, str) and len(path) > MAX_FILESYSTEM_PATH:
            raise ValueError(f"must be at most {MAX_FILESYSTEM_PATH} characters (got {len(path)} characters)")
        return path

    @field_validator("backends_dir", "workers_dir", "secrets_dir", "allowlist")
    @classmethod
    def _from_repo_root(cls, path: Path | None) -> Path | None:
        return path if path is None or path.is_absolute() else REPO_ROOT / path

    @field_validator("mq_router_url")
    @classmethod
    def _one_database_for_several_masters(cls, url: str | None, info: ValidationInfo) -> str | None:
        # Several masters share one database: Buildbot's SQLite is a file in one master's directory.
        db_url = info.data.get("db_url", "")
        if url and db_url.startswith("sqlite:"):
            raise ValueError(f"runs several masters, which share one PostgreSQL database, but db_url is SQLite "
                             f"({db_url}): set CRCR_DB_URL to a postgresql:// URL")
        return url

    @property
    def clustered(self) -> bool:
        """Whether this master is one of several (a router carries their message queue)."""
        return self.mq_router_url is not None

    @property
    def web_url(self) -> str:
        url = self.buildbot_url or f"http://localhost:{self.web_port}/"
        return url if url.endswith("/") else url + "/"

    @property
    def web_listen(self) -> str:
        return _listening(self.web_port, self.web_interface)

    @property
    def worker_listen(self) -> str:
        return _listening(self.worker_port, self.worker_interface)

    @property
    def worker_address(self) -> str:
        """Where worker hosts connect: the web address's host on the worker port, unless set."""
        return self.master_address or f"{urlsplit(self.web_url).hostname}:{self.worker_port}"


def _listening(port: int, interface: str) -> str:
    """A Twisted endpoint description; an IPv6 address's colons are escaped there."""
    return f"tcp:{port}:interface={interface.replace(':', chr(92) + ':')}"


# Each setting's environment variable; lists are comma-separated.
ENV_VARS = {f"CRCR_{name.upper()}": name for name in Settings.model_fields}
LIST_SETTINGS = {"upstream_branches", "admins"}


def load_settings(environ: Mapping[str, str] | None = None, defaults_file: Path = DEFAULTS_FILE) -> Settings:
    """Defaults from the settings file, overridden by the environment; raises ConfigError naming the source."""
    environ = os.environ if environ is None else environ
    values = read_yaml_mapping(defaults_file)
    sources = {name: f"{defaults_file.name}: {name}" for name in values}
    for var, name in ENV_VARS.items():
        if var in environ:
            raw = environ[var]
            values[name] = [b.strip() for b in raw.split(",") if b.strip()] if name in LIST_SETTINGS else raw
            sources[name] = var
    from_environment = {name for name, source in sources.items() if source in ENV_VARS}
    try:
        return Settings.model_validate(values, context={FROM_ENVIRONMENT: from_environment})
    except ValidationError as e:
        raise ConfigError(describe_validation_error(e, lambda field: sources.get(field, field), Settings)) from None
