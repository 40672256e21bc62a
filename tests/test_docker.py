"""docker/: the images and the compose file, checked without a Docker engine (there is none in CI).

What the Dockerfiles copy, install, set and expose, and what compose.yaml wires together, must agree with
the code and the data files; the worker image's entrypoint runs for real, outside Docker.
"""

from __future__ import annotations

import ast
import json
import os
import posixpath
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tomllib
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import backend, prepare_relay, suite
from crcr.cli.hostsetup import MAX_RECONNECT_DELAY, TAC_PASSWORD
from crcr.cli.main import parser as crcr_parser
from crcr.config.loader import load_relay_config
from crcr.config.secretfiles import worker_password
from crcr.config.settings import ENV_VARS, load_settings
from crcr.config.users import users_file, verify
from harness import VENV_BIN, free_port, run, venv_env, wait_until

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
MASTER_DOCKERFILE = "docker/master.Dockerfile"
WORKER_DOCKERFILE = "docker/worker.Dockerfile"
ROUTER_DOCKERFILE = "docker/router.Dockerfile"  # the cluster's (compose.cluster.yaml; test_docker_cluster.py)
DOCKERFILES = [MASTER_DOCKERFILE, WORKER_DOCKERFILE]  # the images installing requirements.txt's pins
IMAGES = [*DOCKERFILES, ROUTER_DOCKERFILE]
ENTRYPOINT = DOCKER / "worker-entrypoint.sh"
SERVICES = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
DEFAULTS = load_settings(environ={})


# --- Reading the Dockerfiles --------------------------------------------------------------------------------


def dockerfile(path: str) -> DockerfileParser:
    return DockerfileParser(str(REPO / path))


def instructions(df: DockerfileParser, name: str) -> list[str]:
    return [i["value"] for i in df.structure if i["instruction"] == name]


def steps(df: DockerfileParser) -> list[tuple[str, str, str]]:
    """(instruction, value, WORKDIR in force) of each instruction."""
    workdir, result = "/", []
    for i in df.structure:
        if i["instruction"] == "WORKDIR":
            workdir = posixpath.join(workdir, i["value"])
        result.append((i["instruction"], i["value"], workdir))
    return result


def copies(df: DockerfileParser) -> list[tuple[list[str], str, bool]]:
    """(sources, destination, destination is a directory) of each COPY and ADD."""
    result = []
    for instruction, value, workdir in steps(df):
        if instruction in ("COPY", "ADD"):
            *sources, dest = [word for word in shlex.split(value) if not word.startswith("--")]
            into_dir = dest.endswith("/") or len(sources) > 1
            result.append((sources, posixpath.normpath(posixpath.join(workdir, dest)), into_dir))
    return result


def image_files(df: DockerfileParser) -> dict[str, str]:
    """Path in the image -> path in the repository, of every file the COPY instructions put in the image."""
    files = {}
    for sources, dest, into_dir in copies(df):
        for source in sources:
            for path in context_files(source):
                if (REPO / source).is_dir():  # a directory's contents go into the destination
                    files[posixpath.join(dest, posixpath.relpath(path, source))] = path
                else:
                    files[posixpath.join(dest, posixpath.basename(path)) if into_dir else dest] = path
    return files


def under(path: str, directory: str) -> bool:
    return PurePosixPath(path).is_relative_to(directory)


# --- The build context: .dockerignore -----------------------------------------------------------------------

GLOB = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


def ignore_patterns() -> list[str]:
    lines = (line.strip() for line in (REPO / ".dockerignore").read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def in_context(path: str) -> bool:
    """Docker's rule: the last pattern matching the path or a directory above it decides; '!' takes it back in."""
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    included = True
    for pattern in ignore_patterns():
        glob = pattern.removeprefix("!").strip("/")
        regex = "".join(GLOB.get(part, re.escape(part)) for part in re.split(r"(\*\*/|\*\*|\*|\?)", glob))
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            included = pattern.startswith("!")
    return included


def git_files(*args: str) -> list[str]:
    return run(["git", "-C", REPO, "ls-files", *args]).stdout.splitlines()


def context_files(source: str) -> list[str]:
    """The files under `source` (a file or a directory) that a fresh clone sends to the image builder."""
    listed = git_files("--cached", "--others", "--exclude-standard", "--", source)
    return [f for f in listed if in_context(f) and (REPO / f).is_file()]


# --- Reading compose.yaml -----------------------------------------------------------------------------------


def service_dockerfile(name: str, services: dict = SERVICES) -> str:
    build = services[name]["build"]
    context = (DOCKER / build["context"]).resolve()
    assert context == REPO, f"compose service {name}: builds from {context}, not the repository root"
    return build["dockerfile"]


def environment(name: str, services: dict = SERVICES) -> dict[str, str]:
    """A service's environment as its container sees it: the image's ENV, then the service's own."""
    image_env = dockerfile(service_dockerfile(name, services)).envs if "build" in services[name] else {}
    return {**image_env, **{k: str(v) for k, v in services[name].get("environment", {}).items()}}


def mounts(name: str, services: dict = SERVICES) -> dict[str, tuple[str, bool]]:
    """Path in the container -> (volume, mounted read-only), of a service's volumes."""
    result = {}
    for spec in services[name].get("volumes", []):
        volume, target, *mode = spec.split(":")
        result[target] = (volume, mode == ["ro"])
    return result


def volume_holding(name: str, path: str, services: dict = SERVICES) -> tuple[str, bool]:
    """The volume (and whether read-only) that holds `path` in a service: the deepest mount above it."""
    holders = [target for target in mounts(name, services) if under(path, target)]
    assert holders, f"compose service {name}: no volume holds {path}"
    return mounts(name, services)[max(holders, key=len)]


# --- The build context and what the images copy ------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "secrets/worker-demo-local",
        "secrets/github-token",
        ".state/demo/master/state.sqlite",
        ".venv/bin/python",
        ".venv-router/bin/crossbar",
        ".git/config",
        "tests/conftest.py",
        ".pytest_cache/v/cache/lastfailed",
        "master/crcr/__pycache__/cli.cpython-311.pyc",
        "master/crcr.egg-info/PKG-INFO",
    ],
)
def test_build_context_leaves_out_secrets_local_state_and_caches(path):
    assert not in_context(path), f".dockerignore lets {path} into the images' build context"


@pytest.mark.parametrize("path", IMAGES)
def test_every_copied_source_exists_and_reaches_the_image_whole(path):
    sources = [source for sources, _, _ in copies(dockerfile(path)) for source in sources]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), f"{path}: COPY {source}: not in the repository"
        assert in_context(source), f"{path}: COPY {source}: left out of the build context by .dockerignore"
        listed = git_files("--cached", "--others", "--exclude-standard", "--", source)
        assert set(context_files(source)) == {f for f in listed if (REPO / f).is_file()}, (
            f"{path}: COPY {source}: .dockerignore leaves out files of it"
        )
        # Files git ignores under a copied folder (bytecode, egg-info) would be copied unless Docker ignores them too.
        ignored = git_files("--others", "--ignored", "--exclude-standard", "--", source)
        assert [f for f in ignored if in_context(f)] == [], f"{path}: COPY {source}: copies files git ignores"


def test_master_image_tree_passes_crcr_check_after_the_compose_init(tmp_path):
    """The image's files, laid out as its COPY instructions do, run the compose init service's command and
    then `crcr check` with the master service's settings (the image's volume in a temporary folder)."""
    df = dockerfile(MASTER_DOCKERFILE)
    image = tmp_path / "image"
    for image_path, repo_path in image_files(df).items():
        target = image / image_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / repo_path, target)  # keeps the scripts executable
    # An editable install puts <project>/<package dir> on sys.path, so settings.REPO_ROOT is <project>.
    editable = [
        posixpath.join(workdir, words[words.index("-e") + 1])
        for instruction, value, workdir in steps(df)
        if instruction == "RUN" and "-e" in (words := shlex.split(value))
    ]
    assert len(editable) == 1, "installed into site-packages, crcr would look for master.cfg and the data there"
    project_dir = image / posixpath.normpath(editable[0]).lstrip("/")
    package_dir = tomllib.loads((project_dir / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"][""]
    [volume] = instructions(df, "VOLUME")
    state = tmp_path / "volume"

    def in_tmp(value: str) -> str:
        return value.replace(volume, str(state))

    def image_env(service: str) -> dict[str, str]:
        env = {k: v for k, v in venv_env().items() if not k.startswith("CRCR_")}
        service_env = {k: in_tmp(v) for k, v in environment(service).items()}
        return {**env, **service_env, "PYTHONPATH": str(project_dir / package_dir)}

    root = run([VENV_BIN / "python", "-c", "from crcr.config.settings import REPO_ROOT; print(REPO_ROOT)"],
               cwd=project_dir, env=image_env("master")).stdout.strip()
    assert Path(root) == project_dir.resolve(), "master.cfg, settings.yaml and the data files must be under REPO_ROOT"

    run([in_tmp(word) for word in SERVICES["init"]["command"]], cwd=project_dir, env=image_env("init"))
    master_env = image_env("master")
    upstream = urlsplit(master_env["CRCR_UPSTREAM_URL"]).path
    assert run(["git", "-C", upstream, "rev-parse", "main"]).stdout.strip(), "init made the demo upstream"
    worker = environment("worker")
    password = Path(in_tmp(worker["CRCR_WORKER_PASSWORD_FILE"]))
    assert stat.S_IMODE(password.stat().st_mode) == 0o600, "init made the worker's password file"
    secrets = Path(in_tmp(environment("init")["CRCR_SECRETS_DIR"]))
    demo_password = (secrets / "demo-password").read_text().strip()
    assert verify(users_file(secrets), "demo", demo_password), "init made the demo's admin, with that password"
    assert "demo" in load_settings(environ=master_env).admins
    check = run([VENV_BIN / "python", "-m", "crcr.cli.main", "check"], cwd=project_dir, env=master_env)
    assert check.stdout.startswith("ok:"), check.stdout + check.stderr


def pins(text: str) -> dict[str, str]:
    """Package -> version specifier, of a requirements or constraints file."""
    lines = (line.split("#")[0].strip() for line in text.splitlines())
    return {canonicalize_name(r.name): str(r.specifier) for r in map(Requirement, filter(None, lines))}


@pytest.mark.parametrize("path", DOCKERFILES)
def test_images_install_their_packages_at_the_pins_of_requirements_txt(path, tmp_path):
    """The image's install from requirements.txt, run by /bin/sh with a pip that records its arguments and
    resolves offline (a dry run) against this venv, which `make venv` built from the same pins."""
    df = dockerfile(path)
    [(workdir, command)] = [(w, v) for i, v, w in steps(df) if i == "RUN" and "requirements.txt" in v]
    assert image_files(df)[posixpath.join(workdir, "requirements.txt")] == "requirements.txt"
    shutil.copy(REPO / "requirements.txt", tmp_path)
    stub = tmp_path / "bin" / "pip"
    stub.parent.mkdir()
    stub.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$@" > "$PIP_ARGS"\n'
        f'exec {shlex.quote(str(VENV_BIN / "python"))} -m pip "$@" --dry-run --no-index --quiet\n'
    )
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}", "PIP_ARGS": str(tmp_path / "args")}
    run(["/bin/sh", "-c", command], cwd=tmp_path, env=env)

    args = (tmp_path / "args").read_text().split()
    assert args[0] == "install"
    packages = [a for i, a in enumerate(args[1:], 1) if not a.startswith("-") and args[i - 1] not in ("-r", "-c")]
    if path == MASTER_DOCKERFILE:
        assert args[args.index("-r") + 1] == "requirements.txt" and packages == []
    else:
        assert "-c" in args, "the worker installs only what it needs, constrained by the master's pins"
        master_pins = pins((REPO / "requirements.txt").read_text())
        assert pins((tmp_path / args[args.index("-c") + 1]).read_text()) == master_pins
        for package in packages:
            assert master_pins.get(canonicalize_name(package), "").startswith("=="), f"{package}: no pin"


# --- The master image and the compose services' settings ----------------------------------------------------


def test_master_image_runs_crcr_master_in_the_foreground_with_its_state_in_the_volume():
    df = dockerfile(MASTER_DOCKERFILE)
    [volume] = instructions(df, "VOLUME")
    command = json.loads(instructions(df, "CMD")[-1])
    assert command[0] == "crcr"
    args = crcr_parser().parse_args(command[1:])
    assert (args.command, args.action, args.nodaemon) == ("master", "start", True)
    assert under(args.basedir, volume)
    assert under(df.envs["CRCR_SECRETS_DIR"], volume)


def test_the_images_run_as_the_same_user_that_is_not_root():
    """The worker container reads the password file (mode 0600) that the master image's user wrote."""
    users = {}
    for path in IMAGES:
        df = dockerfile(path)
        user = instructions(df, "USER")[-1]
        assert user not in ("root", "0"), f"{path} runs as root"
        useradd = [v for v in instructions(df, "RUN") if "useradd" in v]
        assert any(f"--uid {user} " in v for v in useradd), f"{path}: USER {user} is not the user it creates"
        users[path] = user
    assert len(set(users.values())) == 1, users


def test_crcr_variables_of_the_master_image_and_services_are_settings():
    for name in ("init", "master"):
        unknown = sorted(v for v in environment(name) if v.startswith("CRCR_") and v not in ENV_VARS)
        assert unknown == [], f"compose service {name} (or its image) sets variables the relay does not read"
    load_settings(environ=environment("master"))  # raises ConfigError naming the variable


def test_ports_agree_with_the_settings():
    df = dockerfile(MASTER_DOCKERFILE)
    exposed = {int(port) for value in instructions(df, "EXPOSE") for port in value.split()}
    assert exposed == {DEFAULTS.web_port, DEFAULTS.worker_port}
    [healthcheck] = instructions(df, "HEALTHCHECK")
    assert f"'CRCR_WEB_PORT', '{DEFAULTS.web_port}'" in healthcheck and "/api/v2" in healthcheck

    settings = load_settings(environ=environment("master"))
    published = [int(spec.rsplit(":", 1)[1]) for spec in SERVICES["master"]["ports"]]
    assert published == [settings.web_port]
    host, port = environment("worker")["CRCR_MASTER"].rsplit(":", 1)
    assert int(port) == settings.worker_port
    assert host == "master" and "command" not in SERVICES[host], "workers dial the service that runs the master"


def test_the_ui_listens_on_the_containers_interface_and_is_published_on_the_hosts_loopback_only():
    # The relay's default interface, loopback, would be the container's own: the published port would reach nothing.
    assert load_settings(environ=environment("master")).web_interface == "0.0.0.0"
    assert SERVICES["master"]["ports"] == [f"127.0.0.1:{DEFAULTS.web_port}:{DEFAULTS.web_port}"]


def test_compose_master_keeps_its_database_in_the_postgres_service():
    url = urlsplit(environment("master")["CRCR_DB_URL"])
    postgres = SERVICES["postgres"]["environment"]
    assert url.scheme == "postgresql"
    assert (url.hostname, url.port) == ("postgres", 5432)
    assert (url.username, url.password, url.path) == (
        postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"], "/" + postgres["POSTGRES_DB"]
    )
    assert "healthcheck" in SERVICES["postgres"]
    depends = {name: d["condition"] for name, d in SERVICES["master"]["depends_on"].items()}
    assert depends == {"postgres": "service_healthy", "init": "service_completed_successfully"}


def test_compose_worker_is_a_unit_of_a_declared_host_with_only_that_hosts_password():
    worker = environment("worker")
    host_of_unit = {unit.worker_name: host.name for host in load_relay_config(DEFAULTS).hosts for unit in host.units}
    host = host_of_unit.get(worker["CRCR_WORKER_NAME"])
    assert host, f"{worker['CRCR_WORKER_NAME']} is not a unit worker of workers/*.yaml: {sorted(host_of_unit)}"
    password = PurePosixPath(worker["CRCR_WORKER_PASSWORD_FILE"])
    assert password.name == worker_password(host)
    volume, read_only = mounts("worker")[str(password.parent)]
    assert read_only
    # Builds run any upstream commit's or pull request's code: the master's secrets volume is not the worker's.
    secrets_volume, _ = mounts("master")[environment("master")["CRCR_SECRETS_DIR"]]
    assert secrets_volume not in {v for v, _ in mounts("worker").values()}
    assert volume not in {v for v, _ in mounts("master").values()}
    secrets_dir = environment("init")["CRCR_SECRETS_DIR"]
    assert mounts("init")[secrets_dir] == (secrets_volume, False)
    copy_to = next(target for target, (v, _) in mounts("init").items() if v == volume)
    init = SERVICES["init"]["command"][-1]
    assert f"crcr worker ensure-password {host}" in init, "init makes the host's password file"
    assert f"install -D -m 600 {secrets_dir}/{password.name} {copy_to}/{password.name}" in init, (
        "init hands the worker its host's password, and only that")


def test_compose_demo_upstream_is_at_the_same_path_for_init_master_and_worker():
    upstream = urlsplit(environment("master")["CRCR_UPSTREAM_URL"])
    assert upstream.scheme == "file"
    volume, _ = volume_holding("init", upstream.path)
    assert volume_holding("master", upstream.path)[0] == volume
    assert volume_holding("worker", upstream.path) == (volume, True)
    script = f"scripts/init-demo-upstream.sh {posixpath.dirname(upstream.path)}"
    assert script in SERVICES["init"]["command"][-1], "init makes the upstream the master follows"


# --- The worker image and its entrypoint --------------------------------------------------------------------


def script_defaults() -> dict[str, str]:
    """CRCR_* variables the entrypoint gives a default, ${VAR:-default}, with that default."""
    return dict(re.findall(r"\$\{(CRCR_\w+):-([^}]+)\}", ENTRYPOINT.read_text()))


def test_worker_image_runs_the_entrypoint_on_its_volume():
    df = dockerfile(WORKER_DOCKERFILE)
    [entrypoint] = json.loads(instructions(df, "ENTRYPOINT")[-1])
    assert image_files(df)[entrypoint] == str(ENTRYPOINT.relative_to(REPO))
    assert os.access(ENTRYPOINT, os.X_OK), "COPY keeps the mode: the script must be executable"
    assert instructions(df, "VOLUME") == [script_defaults()["CRCR_WORKER_DIR"]]


def test_entrypoint_reads_only_variables_that_are_set_or_have_a_default():
    read = set(re.findall(r"\$\{?(CRCR_\w+)", ENTRYPOINT.read_text()))
    defaults = script_defaults()
    provided = set(environment("worker"))
    assert sorted(read - defaults.keys() - provided) == []
    # A variable that is also a master setting (the keepalive) defaults to the master's value.
    for variable, default in defaults.items():
        if variable in ENV_VARS:
            assert default == str(getattr(DEFAULTS, ENV_VARS[variable])), variable


SHELL_SCRIPTS = sorted([*DOCKER.glob("*.sh"), *(REPO / "scripts").glob("*.sh")])


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_parse(script):
    run(["bash", "-n", script])


def entrypoint_env(**variables: str | None) -> dict[str, str]:
    """This environment without its CRCR_* variables, the venv first on PATH, then `variables` (None: unset)."""
    env = {k: v for k, v in venv_env().items() if not k.startswith("CRCR_")}
    return {**env, **{k: v for k, v in variables.items() if v is not None}}


@pytest.fixture
def unit(tmp_path) -> dict[str, str]:
    """Entrypoint variables for a unit worker of a master that is not there (nothing listens on the port)."""
    password = tmp_path / "worker-host-beta"
    password.write_text("pw-host-beta\n")
    return {
        "CRCR_MASTER": f"localhost:{free_port()}",
        "CRCR_WORKER_NAME": "host-beta-beta-0",
        "CRCR_WORKER_PASSWORD_FILE": str(password),
        "CRCR_WORKER_DIR": str(tmp_path / "worker"),
    }


@pytest.mark.parametrize(
    "change, error",
    [
        ({"CRCR_MASTER": None}, "CRCR_MASTER is not set"),
        ({"CRCR_WORKER_NAME": ""}, "CRCR_WORKER_NAME is not set"),
        ({"CRCR_WORKER_PASSWORD_FILE": "{tmp}/missing"},
         "cannot read the password file {tmp}/missing (CRCR_WORKER_PASSWORD_FILE)"),
        ({"CRCR_WORKER_PASSWORD_FILE": "{tmp}/empty"},
         "the password file {tmp}/empty (CRCR_WORKER_PASSWORD_FILE) is empty"),
        ({"CRCR_WORKER_KEEPALIVE": "soon"}, "CRCR_WORKER_KEEPALIVE must be a whole number of seconds"),
    ],
    ids=["no-master", "no-name", "no-password-file", "empty-password-file", "bad-keepalive"],
)
def test_entrypoint_refuses_a_missing_setting_in_one_line_and_creates_nothing(unit, tmp_path, change, error):
    (tmp_path / "empty").write_text("\n")
    changed = {k: None if v is None else v.format(tmp=tmp_path) for k, v in change.items()}
    env = entrypoint_env(**{**unit, **changed})
    result = run([ENTRYPOINT], env=env, check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and error.format(tmp=tmp_path) in result.stderr, result.stderr
    assert not Path(unit["CRCR_WORKER_DIR"]).exists()


@contextmanager
def entrypoint_running(env: dict[str, str], log: Path):
    """The entrypoint as a container runs it; stopped (SIGTERM, as `docker stop` does) on exit."""
    with open(log, "a") as out:
        process = subprocess.Popen([ENTRYPOINT], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            process.terminate()
            process.wait(timeout=30)


def tac_settings(worker_dir: Path) -> dict:
    """The constants buildbot.tac assigns (workername, passwd, buildmaster_host, port, keepalive, ...)."""
    try:
        tree = ast.parse((worker_dir / "buildbot.tac").read_text())
    except FileNotFoundError:
        return {}
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def recording_buildbot_worker(bin_dir: Path, log: Path) -> Path:
    """A buildbot-worker first on PATH that writes down each command line it is given (what `ps` shows), then
    runs the real one."""
    bin_dir.mkdir()
    wrapper = bin_dir / "buildbot-worker"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
                       f'exec {shlex.quote(str(VENV_BIN / "buildbot-worker"))} "$@"\n')
    wrapper.chmod(0o755)
    return bin_dir


def started(argv_log: Path) -> int:
    """How often the worker was started, by the command lines recorded."""
    lines = argv_log.read_text().splitlines() if argv_log.exists() else []
    return sum(line.startswith("start ") for line in lines)


def tac_password(worker_dir: Path, env: dict[str, str]) -> str:
    """The password buildbot.tac gives the worker when it starts in `env`: the entrypoint hands it the password
    file on standard input, as the systemd unit `crcr worker register` prints does (the same tac line)."""
    [line] = [line for line in (worker_dir / "buildbot.tac").read_text().splitlines() if "passwd =" in line]
    assert line == TAC_PASSWORD
    with open(env["CRCR_WORKER_PASSWORD_FILE"]) as stdin:
        read = subprocess.run([sys.executable, "-c", f"{line}\nprint(passwd)"], stdin=stdin, capture_output=True,
                              text=True, check=True)
    return read.stdout.removesuffix("\n")


def test_entrypoint_passes_no_password_to_any_command_and_the_worker_reads_the_rotated_file_on_restart(
    unit, tmp_path
):
    worker_dir = Path(unit["CRCR_WORKER_DIR"])
    log, argv_log = tmp_path / "entrypoint.log", tmp_path / "argv.log"
    env = entrypoint_env(**unit)
    env["PATH"] = f"{recording_buildbot_worker(tmp_path / 'bin', argv_log)}{os.pathsep}{env['PATH']}"
    # Started, restarted unchanged, restarted after the host's password was rotated.
    for run_number, password in enumerate(("first-password", "first-password", "rotated-password"), 1):
        Path(unit["CRCR_WORKER_PASSWORD_FILE"]).write_text(password + "\n")
        with entrypoint_running(env, log) as process:
            wait_until(lambda: started(argv_log) == run_number, 30, "the entrypoint to start the worker")
            assert process.poll() is None, "the worker keeps running, retrying the master: " + log.read_text()
            assert password not in (worker_dir / "buildbot.tac").read_text()
            assert tac_password(worker_dir, env) == password
    assert "first-password" not in argv_log.read_text() and "rotated-password" not in argv_log.read_text(), (
        argv_log.read_text()
    )
    host, port = unit["CRCR_MASTER"].split(":")
    expected = {
        "workername": unit["CRCR_WORKER_NAME"],
        "buildmaster_host": host,
        "port": int(port),
        "keepalive": DEFAULTS.worker_keepalive,
        "maxdelay": MAX_RECONNECT_DELAY,  # what `crcr worker register` prints for hosts
    }
    tac = tac_settings(worker_dir)
    assert {key: tac[key] for key in expected} == expected
    assert not (worker_dir / "buildbot.tac.new").exists()


@pytest.fixture(scope="module")
def lone_master(tmp_path_factory, upstream, github):
    """A real relay master whose workers the tests start themselves (none is started for them)."""
    backends = {"ok-beta": backend("L1", "beta", [suite("pass", "test/test_pass.py")])}
    master, _ = prepare_relay(tmp_path_factory.mktemp("docker-relay"), upstream, github, backends)
    master.start()
    yield master
    master.stop()


@pytest.mark.e2e
def test_entrypoint_connects_a_unit_worker_to_a_real_master_with_the_password_file_it_finds_at_start(
    lone_master, tmp_path
):
    name = "host-beta-beta-0"  # the one unit of conftest's host-beta, whose password prepare_relay wrote
    password_file = tmp_path / "crcr-worker-password"
    password_file.write_text("the-password-before-a-rotation\n")
    env = entrypoint_env(
        CRCR_MASTER=f"localhost:{lone_master.env['CRCR_WORKER_PORT']}",
        CRCR_WORKER_NAME=name,
        CRCR_WORKER_PASSWORD_FILE=str(password_file),
        CRCR_WORKER_DIR=str(tmp_path / "worker"),
    )
    log = tmp_path / "entrypoint.log"

    def connected():
        return any(w["name"] == name and w["connected_to"] for w in lone_master.get("workers")["workers"])

    def logs() -> str:
        worker_log = tmp_path / "worker" / "twistd.log"
        return (f"{log.read_text()}\n{worker_log.read_text() if worker_log.exists() else ''}\n"
                f"--- master log ---\n{lone_master.log_tail()}")

    with entrypoint_running(env, log):
        wait_until(lambda: f"invalid login from user '{name}'" in lone_master.log_tail(400), 60,
                   "the master to refuse the old password")
        assert not connected()
    # The host's password was rotated: the new one is mounted in place of the old, and the container restarted.
    password_file.write_text((Path(lone_master.env["CRCR_SECRETS_DIR"]) / worker_password("host-beta")).read_text())
    with entrypoint_running(env, log):
        try:
            wait_until(connected, 60, f"{name} to connect")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{logs()}") from None


@pytest.mark.e2e
def test_master_image_healthcheck_passes_on_a_running_master_and_fails_without_one(lone_master):
    [healthcheck] = instructions(dockerfile(MASTER_DOCKERFILE), "HEALTHCHECK")
    command = json.loads(healthcheck.split(" CMD ", 1)[1])
    web_port = urlsplit(lone_master.web_url).port
    assert run(command, env=venv_env(CRCR_WEB_PORT=str(web_port)), check=False).returncode == 0
    assert run(command, env=venv_env(CRCR_WEB_PORT=str(free_port())), check=False).returncode != 0
