"""Shared end-to-end fixtures: one real relay (master + two workers) on loopback for the session."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

import copied_schema
import labhost
import shared_sql_cache
from configfiles import make_dirs, write_file, write_secret
from crcr.config.secretfiles import GITHUB_WEBHOOK_SECRET
from crcr.config.users import add_user, users_file
from fakegithub import FakeGitHub
from harness import ADMIN, Relay, Upstream, WorkerProcess, free_port, tell_pushes_to, wait_until
from postgres import PostgresServer, server_bin_dir
from webhooks import WEBHOOK_SECRET

UPSTREAM_TREE = Path(__file__).parent / "upstream_tree"
GITHUB_TOKEN = "test-token-123"
RELEASE_BRANCH = "release/2.9"
BUDGET_BRANCH = "budget"
UNITS_BRANCH = "units"
# Upstream test files the relay runs inside builds, not tests of ours.
collect_ignore = ["upstream_tree"]


# Python's cyclic garbage collector runs every 700 new objects by default, and the tests make millions (fake masters,
# SQLAlchemy statements, Deferreds): a tenth of the unit tests' CPU went to it. Every 50,000 here, with what
# collection loaded (modules, classes) set apart once for good, as servers tuned for throughput do; the collector
# still runs, so no cycle is kept for the whole run.
GC_THRESHOLDS = (50_000, 50, 100)


def pytest_configure(config):
    gc.set_threshold(*GC_THRESHOLDS)
    config.addinivalue_line("markers", "e2e: starts real master and worker processes")
    config.addinivalue_line(
        "markers", "waits: a unit test that mostly waits out real time (a bound on a real process), using no CPU")
    config.addinivalue_line(
        "markers", "needs_torch: runs PyTorch's tests on a worker, with the Python CRCR_TEST_TORCH_PYTHON names (skipped "
        "without torch)")


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()  # what collection loaded lives as long as the process: never scanned again


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the end-to-end modules first, then the unit tests that wait: they are the long ones, and
    one handed out last would keep its process busy while the others stand idle; a test that waits handed out first
    waits while the other processes use the cores (the Makefile keeps xdist from reordering them)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: (item.get_closest_marker("e2e") is None, item.get_closest_marker("waits") is None))


@pytest.fixture(scope="session", autouse=True)
def schema_made_once():
    """Buildbot's test databases copied from the first one of the process (copied_schema.py), their engines
    sharing one cache of compiled statements (shared_sql_cache.py)."""
    with pytest.MonkeyPatch.context() as patch:
        copied_schema.install(patch)
        shared_sql_cache.install(patch)
        yield


@pytest.fixture(autouse=True)
def own_working_directory():
    """Each test in a folder of its own, as trial runs its tests in _trial_temp: Buildbot's fake master keeps its
    files (an SQLite database, the upstream mirror) under 'basedir' relative to it, which tests running at the
    same time in other processes would otherwise share, and delete under each other. (tempfile's, not tmp_path:
    pytest lists its numbered folders at each one it makes, which over a thousand tests costs seconds.)"""
    folder, previous = tempfile.mkdtemp(prefix="crcr-test-"), os.getcwd()
    os.chdir(folder)
    yield
    os.chdir(previous)
    shutil.rmtree(folder, ignore_errors=True)


def suite(name: str, test_file: str) -> dict:
    return {"name": name, "command": f"python -m pytest {test_file} -q --junitxml=$CRCR_RESULTS_DIR/{name}.xml", "timeout": 120}


def backend(level: str, device: str, suites: list[dict], branches=("main",), **extra) -> dict:
    return {
        "description": f"test backend on {device}",
        "maintainers": ["octocat"],
        "level": level,
        "device": device,
        "branches": list(branches),
        "timeout": 300,
        **extra,
        "suites": suites,
    }


# The main relay's backends with several suites on host-alpha's two units say `fan_out: false`: they are the
# stories of a serial build (its steps in turn, its setup, its budget), which test_fan_out_e2e tells fanned out.
E2E_BACKENDS = {
    "ok-alpha": backend(
        "L2", "alpha",
        [suite("env", "test/test_env.py"), suite("pass", "test/test_pass.py")],
        setup=["touch $CRCR_RESULTS_DIR/setup-done"],
        env={"PYTORCH_TESTING_DEVICE_ONLY_FOR": "alpha"}, fan_out=False,
    ),
    "broken-alpha": backend(
        "L2", "alpha",
        [suite("first", "test/test_pass.py"), suite("broken", "test/test_fail.py"), suite("after", "test/test_pass.py")],
        fan_out=False,
    ),
    "quiet-alpha": backend("L1", "alpha", [suite("pass", "test/test_pass.py")]),
    "release-alpha": backend("L2", "alpha", [suite("pass", "test/test_pass.py")], branches=[RELEASE_BRANCH]),
    "ok-beta": backend("L2", "beta", [suite("pass", "test/test_pass.py")]),
    # Two backends on host-beta's single beta unit: their builds must take turns.
    **{
        name: backend("L1", "beta", [{"name": "hold", "command": "sleep 3", "timeout": 60}], branches=[UNITS_BRANCH])
        for name in ("unit-beta-1", "unit-beta-2")
    },
    "budget-alpha": {
        **backend("L1", "alpha", [], branches=[BUDGET_BRANCH], fan_out=False),
        "timeout": 15,  # leaves the quick suite ample time on a loaded machine
        # The suites keep their default timeouts (an hour): the build's 15 s budget is what cuts them.
        "suites": [
            {"name": "quick", "command": "sleep 1"},
            {"name": "slow", "command": "sleep 120"},
            {"name": "never", "command": "echo never"},
        ],
    },
}
MAIN_BACKENDS = ["ok-alpha", "broken-alpha", "quiet-alpha", "ok-beta"]
SUCCESS, FAILURE = 0, 2  # Buildbot's result codes
E2E_WORKERS = {
    "host-alpha": {"devices": {"alpha": 2}, "admin": "Alpha Lab <alpha@example.com>"},
    "host-beta": {"devices": {"beta": 1}, "admin": "Beta Lab <beta@example.com>"},
}


@pytest.fixture(scope="session")
def github():
    fake = FakeGitHub().start()
    yield fake
    fake.stop()


@pytest.fixture
def own_github():
    """A GitHub of the test's own, so that its records are the test's alone."""
    fake = FakeGitHub().start()
    yield fake
    fake.come_back()
    fake.stop()


@pytest.fixture
def postgres():
    """A private PostgreSQL server for one test."""
    bin_dir = server_bin_dir()
    if bin_dir is None:
        pytest.fail("PostgreSQL server binaries are missing: .ci/run installs Debian's postgresql package")
    server = PostgresServer(bin_dir).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def upstream(tmp_path_factory) -> Upstream:
    return make_upstream(tmp_path_factory.mktemp("upstream"))


def make_upstream(root: Path) -> Upstream:
    """An upstream with the test tree on main and on each branch the relays follow."""
    repo = Upstream(root)
    files = {str(p.relative_to(UPSTREAM_TREE)): p.read_text() for p in UPSTREAM_TREE.rglob("*.py")}
    repo.commit("Initial upstream with its test suite", files)
    repo.branch_from(RELEASE_BRANCH)
    repo.branch_from(BUDGET_BRANCH)
    repo.branch_from(UNITS_BRANCH)
    repo.commit("Second upstream commit")
    return repo


def relay_env(root: Path, upstream: Upstream, github: FakeGitHub) -> dict[str, str]:
    web_port = free_port()
    return {
        "CRCR_UPSTREAM_URL": upstream.url,
        "CRCR_UPSTREAM_BRANCHES": f"main,{RELEASE_BRANCH},{BUDGET_BRANCH},{UNITS_BRANCH}",
        # Pushes are told to the relay at once (push_hook.py, prepare_relay); a poll finds those no hook told.
        "CRCR_POLL_INTERVAL": "5",
        "CRCR_GITHUB_API_URL": github.url,
        "CRCR_GITHUB_REPO": "pytorch/pytorch",
        "CRCR_BACKENDS_DIR": str(root / "backends"),
        "CRCR_WORKERS_DIR": str(root / "workers"),
        "CRCR_SECRETS_DIR": str(root / "secrets"),
        "CRCR_WEB_PORT": str(web_port),
        "CRCR_WORKER_PORT": str(free_port()),
        "CRCR_BUILDBOT_URL": f"http://localhost:{web_port}/",
        # A status GitHub refused is tried again within seconds, not the 10 s doubling to 10 min of a real relay.
        "CRCR_OUTBOX_RETRY_DELAY": "1",
        "CRCR_OUTBOX_MAX_DELAY": "5",
    }


def unit_names(host: str, devices: dict[str, int]) -> list[str]:
    """The Buildbot worker of each device unit: <host>-<device>-<index>."""
    return [f"{host}-{device}-{index}" for device, count in devices.items() for index in range(count)]


def prepare_relay(root: Path, upstream: Upstream, github: FakeGitHub, backends: dict, token: bool = True,
                  hosts: dict = E2E_WORKERS, webhooks: bool = True,
                  **env_overrides: str) -> tuple[Relay, list[WorkerProcess]]:
    """Write the data files and secrets a relay needs under `root`; return its master and the units of `hosts`.
    The relay has an admin (harness.ADMIN, in its users file and CRCR_ADMINS), whom Relay signs in as; and, unless
    `webhooks` is false, a webhook secret, through which each push to `upstream` is told to it (push_hook.py)."""
    admin, password = ADMIN
    env = {**relay_env(root, upstream, github), "CRCR_ADMINS": admin, **env_overrides}
    dirs = make_dirs(root)
    add_user(users_file(dirs.secrets), admin, password)
    for name, data in backends.items():
        write_file(dirs.backends / f"{name}.yaml", yaml.safe_dump(data, sort_keys=False))
    for name, data in hosts.items():
        write_file(dirs.workers / f"{name}.yaml", yaml.safe_dump(data, sort_keys=False))
        write_secret(dirs.secrets, f"worker-{name}", f"pw-{name}\n")
    if token:
        write_secret(dirs.secrets, "github-token", GITHUB_TOKEN + "\n")
    if webhooks:
        tell_pushes_to(env, write_secret(dirs.secrets, GITHUB_WEBHOOK_SECRET, WEBHOOK_SECRET + "\n"))
    keepalive = min(10, int(env.get("CRCR_WORKER_KEEPALIVE", 10)))
    workers = [
        # Each host's units in the host's folder, as the host tool lays them out: a host's cache is shared by its own.
        WorkerProcess(root / "worker-hosts" / host / unit, unit, f"pw-{host}", int(env["CRCR_WORKER_PORT"]), keepalive)
        for host, data in hosts.items()
        for unit in unit_names(host, data["devices"])
    ]
    return Relay(root / "master", env), workers


@contextmanager
def running(master: Relay, workers: list[WorkerProcess]):
    """Start the master and its workers, wait until every worker is connected, stop all on exit."""
    try:
        master.start()
        for w in workers:
            w.start()
        wait_until(
            lambda: all(w["connected_to"] for w in master.get("workers")["workers"]), 60, "every worker to connect"
        )
        yield master
    finally:
        for w in workers:
            w.stop()
        master.stop()


@pytest.fixture(scope="session")
def relay(tmp_path_factory, upstream, github):
    master, workers = prepare_relay(tmp_path_factory.mktemp("relay"), upstream, github, E2E_BACKENDS)
    with running(master, workers):
        yield master


@pytest.fixture(scope="session")
def pushed(relay, upstream):
    """One new upstream commit on main, and the finished build of every backend that tests main."""
    sha = upstream.commit("Upstream change to relay")
    return sha, {name: relay.wait_for_finished_build(name, sha) for name in MAIN_BACKENDS}


# Without the background-networking flags Chromium keeps dialing out of this closed network.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,900",
]


@pytest.fixture(scope="session")
def lab_host_root():
    """A folder the test hosts' accounts may read (labhost.shared_root)."""
    with labhost.shared_root() as root:
        yield root


@pytest.fixture(scope="session")
def host_env(lab_host_root):
    """What a test host runs `crcr-host` with (labhost.host_environment)."""
    return labhost.host_environment(lab_host_root)


@pytest.fixture(scope="session")
def trial_account(lab_host_root, host_env):
    """An unprivileged account running a trial host (labhost.trial_account)."""
    with labhost.trial_account(lab_host_root, host_env) as account:
        yield account


@contextmanager
def chromium(tmp_path_factory):
    """Debian's headless Chromium, driven through Debian's chromedriver, with a profile of its own."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and chromedriver):
        pytest.fail("chromium and chromedriver are missing: .ci/run installs Debian's chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console: webui.page_errors
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory) as driver:
        yield driver


@pytest.fixture
def anonymous_browser(tmp_path_factory):
    """A Chromium that has never signed in: it has no name and password to answer a sign-in with (webui.sign_in's
    stay with a browser, for every later sign-in to the same relay)."""
    with chromium(tmp_path_factory) as driver:
        yield driver
