"""docker/: the cluster variant, checked without a Docker engine like the rest of docker/ (test_docker.py).

The router's image must run Crossbar.io from router/requirements.txt with the configuration `crcr router start`
writes; compose.cluster.yaml, laid over compose.yaml, must give two masters one database, one router and the same
files, each its own directory, ports and name, and keep the router (WAMP has no authentication in Buildbot 4.3)
where only the masters reach it.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from urllib.parse import urlsplit

import yaml

from crcr.cli.main import parser as crcr_parser
from crcr.cli.router import router_config, router_url
from crcr.config.settings import ENV_VARS, load_settings
from test_docker import (
    DOCKER,
    MASTER_DOCKERFILE,
    REPO,
    ROUTER_DOCKERFILE,
    SERVICES,
    dockerfile,
    environment,
    image_files,
    instructions,
    steps,
    volume_holding,
)

CLUSTER_FILE = DOCKER / "compose.cluster.yaml"
CLUSTER = yaml.safe_load(CLUSTER_FILE.read_text())
ROUTER_CBDIR_CONFIG = "config.json"  # Crossbar's default name in its --cbdir


def laid_over(base, overlay):
    """What compose makes of `docker compose -f base -f overlay` for the keys these files use: mappings merged key
    by key (services, environment, depends_on), lists joined without repeats (networks), anything else replaced."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        return {**base, **{key: laid_over(base.get(key), value) for key, value in overlay.items()}}
    if isinstance(base, list) and isinstance(overlay, list):
        return base + [item for item in overlay if item not in base]
    return overlay


SERVICES_OF_CLUSTER = laid_over(SERVICES, CLUSTER["services"])
MASTERS = sorted(name for name in SERVICES_OF_CLUSTER if "CRCR_MQ_ROUTER_URL" in SERVICES_OF_CLUSTER[name].get(
    "environment", {}))


def cluster_environment(name: str) -> dict[str, str]:
    return environment(name, SERVICES_OF_CLUSTER)


def networks(name: str) -> set[str]:
    return set(SERVICES_OF_CLUSTER[name].get("networks", ["default"]))


def published(name: str) -> list[str]:
    return SERVICES_OF_CLUSTER[name].get("ports", [])


# --- The router's image -------------------------------------------------------------------------------------


def router_image_config() -> tuple[str, dict]:
    """The folder Crossbar runs in (its CMD's --cbdir) and the configuration the image puts there."""
    df = dockerfile(ROUTER_DOCKERFILE)
    command = json.loads(instructions(df, "CMD")[-1])
    assert command[:2] == ["crossbar", "start"], command
    cbdir = command[command.index("--cbdir") + 1]
    source = image_files(df)[posixpath.join(cbdir, ROUTER_CBDIR_CONFIG)]
    return cbdir, json.loads((REPO / source).read_text())


def test_router_image_runs_the_configuration_crcr_router_start_writes_on_the_containers_interface():
    _, config = router_image_config()
    [transport] = config["workers"][0]["transports"]
    port = transport["endpoint"]["port"]
    [realm] = config["workers"][0]["realms"]
    # Loopback would be the container's own: the masters reach it on the container's interface.
    assert config == router_config(port, "0.0.0.0", realm["name"])
    df = dockerfile(ROUTER_DOCKERFILE)
    assert instructions(df, "EXPOSE") == [str(port)]
    [healthcheck] = instructions(df, "HEALTHCHECK")
    assert f"('127.0.0.1', {port})" in healthcheck


def test_router_image_installs_router_requirements_whole_without_resolving_as_make_router_venv():
    df = dockerfile(ROUTER_DOCKERFILE)
    [(workdir, command)] = [(w, v) for i, v, w in steps(df) if i == "RUN" and "requirements.txt" in v]
    assert image_files(df)[posixpath.join(workdir, "requirements.txt")] == "router/requirements.txt"
    words = shlex.split(command)
    assert words[:2] == ["pip", "install"] and "--no-deps" in words
    assert words[words.index("-r") + 1] == "requirements.txt"
    assert (REPO / "Makefile").read_text().count("--no-deps -r router/requirements.txt") == 1


# --- compose.cluster.yaml laid over compose.yaml --------------------------------------------------------------


def test_cluster_adds_a_router_and_a_second_master_to_the_single_masters_services():
    assert set(SERVICES_OF_CLUSTER) == set(SERVICES) | {"router", "master-b"}
    assert MASTERS == ["master", "master-b"]
    assert SERVICES_OF_CLUSTER["router"]["build"]["dockerfile"] == ROUTER_DOCKERFILE
    for name in MASTERS:
        assert SERVICES_OF_CLUSTER[name]["image"] == SERVICES["master"]["image"], "the masters share one image"
        assert SERVICES_OF_CLUSTER[name]["build"]["dockerfile"] == MASTER_DOCKERFILE
        assert SERVICES_OF_CLUSTER[name]["restart"] == "unless-stopped", (
            "a master that lost the router exits for its supervisor to start it again")


def test_router_is_published_nowhere_and_shares_a_network_with_the_masters_only():
    assert published("router") == []
    assert "expose" not in SERVICES_OF_CLUSTER["router"]
    assert "default" not in networks("router")
    reaching = {name for name in SERVICES_OF_CLUSTER if name != "router" and networks(name) & networks("router")}
    assert reaching == set(MASTERS), "the worker runs any commit's code: it must not reach the router"
    for network in networks("router"):
        assert CLUSTER["networks"][network]["internal"] is True


def test_cluster_masters_share_the_database_router_realm_files_and_public_address():
    _, config = router_image_config()
    [transport] = config["workers"][0]["transports"]
    [realm] = config["workers"][0]["realms"]
    settings = {name: load_settings(environ=cluster_environment(name)) for name in MASTERS}
    for name, each in settings.items():
        unknown = sorted(v for v in cluster_environment(name) if v.startswith("CRCR_") and v not in ENV_VARS)
        assert unknown == [], f"compose service {name} sets variables the relay does not read"
        assert each.clustered
        assert each.mq_router_url == router_url(transport["endpoint"]["port"], "router")
        assert each.mq_realm == realm["name"]
        assert urlsplit(each.db_url).hostname == "postgres"
    shared = ("db_url", "mq_router_url", "mq_realm", "takeover_after", "upstream_url", "secrets_dir",
              "backends_dir", "workers_dir", "buildbot_url", "admins", "auth")
    for field in shared:
        assert getattr(settings["master"], field) == getattr(settings["master-b"], field), field
    # Their secrets, and the demo upstream the builds check out, are the same volumes.
    for path in (settings["master"].secrets_dir, urlsplit(settings["master"].upstream_url).path):
        assert len({volume_holding(name, str(path), SERVICES_OF_CLUSTER) for name in MASTERS}) == 1, path


def test_cluster_masters_have_a_directory_ports_and_name_of_their_own():
    command = json.loads(instructions(dockerfile(MASTER_DOCKERFILE), "CMD")[-1])
    basedir = str(crcr_parser().parse_args(command[1:]).basedir)
    assert all("command" not in SERVICES_OF_CLUSTER[name] for name in MASTERS), "both run the image's CMD"
    directories = {volume_holding(name, basedir, SERVICES_OF_CLUSTER)[0] for name in MASTERS}
    assert len(directories) == len(MASTERS), "each master has a master directory (a volume) of its own"
    assert len({SERVICES_OF_CLUSTER[name]["hostname"] for name in MASTERS}) == len(MASTERS), (
        "Buildbot names a master <host>:<basedir>: the names must differ, and stay the same when re-created")
    settings = [load_settings(environ=cluster_environment(name)) for name in MASTERS]
    assert len({each.web_port for each in settings}) == len({each.worker_port for each in settings}) == len(MASTERS)
    # One master serves the UI (and the webhooks), on the host's loopback as with one master.
    assert [name for name in MASTERS if published(name)] == ["master"]
    assert published("master") == SERVICES["master"]["ports"]


def test_cluster_starts_the_router_before_the_masters_and_one_master_before_the_other():
    def after(name: str, services: dict = SERVICES_OF_CLUSTER) -> dict[str, str]:
        return {other: d["condition"] for other, d in services[name]["depends_on"].items()}

    assert "healthcheck" not in SERVICES_OF_CLUSTER["router"], "the image's HEALTHCHECK tells when it listens"
    assert instructions(dockerfile(ROUTER_DOCKERFILE), "HEALTHCHECK")
    assert after("master") == {**after("master", SERVICES), "router": "service_healthy"}
    # Buildbot's upgrade-master, which every start runs, is not made for two masters upgrading at once.
    assert after("master-b") == {"master": "service_healthy", "router": "service_healthy"}
    host, port = cluster_environment("worker")["CRCR_MASTER"].rsplit(":", 1)
    assert host in MASTERS and int(port) == load_settings(environ=cluster_environment(host)).worker_port

