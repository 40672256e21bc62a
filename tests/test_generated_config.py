"""Unit tests of the generated Buildbot configuration (in the spirit of WebKit's build-webkit-org tests).

The configuration is built from files in a temporary directory and checked as Buildbot sees it,
then handed to Buildbot's own loader, which must accept it. No process is started.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from types import SimpleNamespace

import pytest
from buildbot.changes.gitpoller import GitPoller
from buildbot.config.errors import ConfigErrors
from buildbot.config.master import MasterConfig
from buildbot.process.properties import Properties
from buildbot.reporters.github import GitHubStatusPush
from buildbot.schedulers.basic import AnyBranchScheduler
from buildbot.schedulers.forcesched import ForceScheduler
from buildbot.schedulers.triggerable import Triggerable
from buildbot.steps.shell import ShellCommand
from buildbot.steps.source.git import Git
from buildbot.warnings import ConfigWarning
from buildbot.worker.local import LocalWorker
from buildbot.www.config import get_www_frontend_config_dict, serialize_www_frontend_config_dict_to_json

from configfiles import (
    make_dirs,
    settings_for,
    write_backend,
    write_file,
    write_secret,
    write_worker,
    write_worker_password,
)
from crcr.buildmaster.changes.pull_requests import PullRequestRelay
from crcr.buildmaster.changes.upstream_mirror import UpstreamMirror
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.process.workers import HostUnitWorker, unit_can_start_build
from crcr.buildmaster.reporters.pytorch_relay_jobs import PyTorchRelayJobs
from crcr.buildmaster.schedulers.force import BisectScheduler
from crcr.buildmaster.schedulers.force_forms import OwnBuildersForceScheduler
from crcr.buildmaster.schedulers.pull_requests import PullRequestScheduler
from crcr.buildmaster.services.every_master.health import RelayHealth
from crcr.buildmaster.services.every_master.leadership import RelayLeadership
from crcr.buildmaster.services.every_master.liveness import SilentWorkerWatch
from crcr.buildmaster.services.every_master.presence import DevicePresence
from crcr.buildmaster.services.every_master.quarantine_keeper import QuarantineKeeper
from crcr.buildmaster.services.every_master.waking import CrossMasterWaker
from crcr.buildmaster.services.leader.disabled_tests import DisabledTestsFollower
from crcr.buildmaster.services.leader.history_recorder import HistoryRecorder
from crcr.buildmaster.services.leader.janitor import RelayJanitor
from crcr.buildmaster.services.leader.ledger import CommitLedger
from crcr.buildmaster.services.leader.levels import LevelHistory
from crcr.buildmaster.services.leader.orphans import OrphanedChildren
from crcr.buildmaster.services.leader.stale import StaleWatch, WatchedBackend
from crcr.buildmaster.services.leader.units_out import UnitsResumed
from crcr.cli.mastercontrol import MASTER_CFG
from crcr.config.loader import load_relay_config
from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.github.commit_status import OutboxStatusPush
from crcr.github.outbox_sender import OutboxSender
from crcr.names import (
    BACKEND_PROPERTY,
    CARD_PROPERTY,
    DEVICE_INDEX_PROPERTY,
    DEVICE_PROPERTY,
    HOST_PROPERTY,
    RELAY_WORKER,
    bisect_scheduler_name,
    build_builder_name,
    children_builder_name,
    force_scheduler_name,
    upstream_scheduler_name,
)
from crcr.plan.builds import plan_builders
from crcr.store.service import RelayStore
from crcr.suites.selection import PLUGIN_FILES, STOP_CONFIG, STOP_CONFIG_FILE

ALPHA_SUITES = [
    {"name": "unit", "command": "python -m pytest test/unit", "timeout": 600},
    {"name": "integration", "command": "python -m pytest test/integration"},
]
ALPHA_SETUP = ["pip install -e .", "python -c 'import torch_alpha'"]


@pytest.fixture
def dirs(tmp_path):
    """alpha (L2) and delta (L3) on device alpha, beta (L1) on beta, gamma (L2) on a device no host has. alpha's
    suites run in one build (`fan_out: false`; its three units would fan them out): the serial build's config."""
    dirs = make_dirs(tmp_path)
    write_backend(
        dirs.backends,
        "alpha",
        level="L2",
        device="alpha",
        timeout=7200,
        setup=ALPHA_SETUP,
        env={"PYTORCH_TESTING_DEVICE_ONLY_FOR": "alpha"},
        suites=ALPHA_SUITES,
        fan_out=False,
    )
    write_backend(dirs.backends, "beta", level="L1", device="beta")
    write_backend(dirs.backends, "delta", level="L3", device="alpha")
    write_backend(dirs.backends, "gamma", level="L2", device="gamma")
    write_worker(dirs.workers, "host-a", devices={"alpha": 2})
    write_worker(dirs.workers, "host-ab", devices={"alpha": 1, "beta": 1}, max_builds=1)
    for host in ("host-a", "host-ab"):
        write_worker_password(dirs.secrets, host)
    return dirs


def with_github_token(dirs):
    write_secret(dirs.secrets, GITHUB_TOKEN, "ghp_test\n")


def config_for(dirs, **env):
    return build_master_config(settings_for(dirs, **env))


def builders_by_name(cfg):
    return {b.name: b for b in cfg["builders"]}


def step_names(builder):
    return [step.kwargs["name"] for step in builder.factory.steps]


def steps_by_name(builder):
    return {step.kwargs["name"]: step for step in builder.factory.steps}


def load_with_buildbot(cfg) -> MasterConfig:
    return MasterConfig.loadFromDict(cfg, "master.cfg")


def test_one_builder_per_active_backend_named_after_its_file(dirs):
    cfg = config_for(dirs)

    # gamma's device is on no host: no builder until one is registered.
    assert [b.name for b in cfg["builders"]] == ["alpha", "beta", "delta"]


def test_builder_runs_only_on_the_units_of_its_device(dirs):
    builders = builders_by_name(config_for(dirs))

    alpha_units = ["host-a-alpha-0", "host-a-alpha-1", "host-ab-alpha-0"]
    assert builders["alpha"].workernames == alpha_units
    assert builders["beta"].workernames == ["host-ab-beta-0"]
    assert builders["delta"].workernames == alpha_units


def test_builder_tags_description_and_properties(dirs):
    builders = builders_by_name(config_for(dirs))

    for name, device, level in [("alpha", "alpha", "L2"), ("beta", "beta", "L1"), ("delta", "alpha", "L3")]:
        builder = builders[name]
        assert device in builder.tags and level in builder.tags
        assert builder.properties[BACKEND_PROPERTY] == name
        assert builder.description == f"Test accelerator. Level {level}, device {device}; maintainers: @octocat."
        assert builder.project == "pytorch/pytorch"


def test_builder_steps_in_order(dirs):
    builders = builders_by_name(config_for(dirs))

    common = ["pull request", "commits covered", "checkout upstream", "prepare build folder"]
    assert step_names(builders["alpha"]) == common + ["setup 1", "setup 2", "suite unit", "suite integration"]
    assert step_names(builders["beta"]) == common + ["suite smoke"]
    assert list(steps_by_name(builders["beta"])["prepare build folder"].kwargs["shipped"]) == [STOP_CONFIG_FILE], \
        "no pytest suite: no plugin"


def test_a_devices_health_check_and_identify_command_come_first_on_its_units(dirs):
    write_file(dirs.workers / "devices" / "alpha.yaml",
               "health_check: alpha-smi --check\nidentify: alpha-smi --serial --index $CRCR_DEVICE_INDEX\n")
    builders = builders_by_name(config_for(dirs))

    alpha = steps_by_name(builders["alpha"])
    assert step_names(builders["alpha"])[2:5] == ["health check", "identify card", "checkout upstream"]
    assert alpha["health check"].kwargs["command"] == "alpha-smi --check"
    assert (alpha["identify card"].kwargs["property"], alpha["identify card"].kwargs["flunkOnFailure"]) == (
        CARD_PROPERTY, False), "a card that cannot say who it is still builds"
    assert "health check" not in step_names(builders["beta"]), "beta's device has no file"


def test_checkout_is_of_the_upstream_repository(dirs):
    cfg = config_for(dirs, CRCR_UPSTREAM_URL="https://example.org/mirror/pytorch.git")
    checkout = steps_by_name(builders_by_name(cfg)["alpha"])["checkout upstream"]

    assert issubclass(checkout.step_class, Git)
    assert checkout.kwargs["repourl"] == "https://example.org/mirror/pytorch.git"
    assert checkout.kwargs["workdir"] == "upstream"
    assert checkout.kwargs["haltOnFailure"] is True


def test_setup_steps_halt_and_suite_steps_do_not(dirs):
    steps = steps_by_name(builders_by_name(config_for(dirs))["alpha"])

    for number, command in enumerate(ALPHA_SETUP, start=1):
        setup = steps[f"setup {number}"]
        assert issubclass(setup.step_class, ShellCommand)
        assert setup.kwargs["command"] == command
        assert setup.kwargs["haltOnFailure"] is True
    for suite in ALPHA_SUITES:
        step = steps[f"suite {suite['name']}"]
        assert issubclass(step.step_class, ShellCommand)
        assert step.kwargs["command"] == suite["command"]
        assert step.kwargs["haltOnFailure"] is False
        assert step.kwargs["flunkOnFailure"] is True


def test_suite_timeouts_and_build_budget_come_from_the_backend_file(dirs):
    steps = steps_by_name(builders_by_name(config_for(dirs))["alpha"])

    assert steps["suite unit"].kwargs["maxTime"] == 600
    assert steps["suite integration"].kwargs["maxTime"] == 3600  # the default
    for name in ("setup 1", "setup 2", "suite unit", "suite integration"):
        assert steps[name].kwargs["build_timeout"] == 7200


def test_commands_see_the_backend_env_and_the_relay_variables(dirs):
    steps = steps_by_name(builders_by_name(config_for(dirs))["alpha"])

    for name in ("setup 1", "suite unit"):
        env = steps[name].kwargs["env"]
        assert env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] == "alpha"
        assert env["CRCR_BACKEND"] == "alpha"
        assert {"CRCR_UPSTREAM_SHA", "CRCR_UPSTREAM_DIR", "CRCR_RESULTS_DIR", "CRCR_DEVICE_INDEX"} <= set(env)


def test_each_device_unit_is_a_worker_running_one_build_with_its_hosts_password(dirs):
    workers = {w.workername: w for w in config_for(dirs)["workers"]}

    assert list(workers) == ["host-a-alpha-0", "host-a-alpha-1", "host-ab-alpha-0", "host-ab-beta-0"]
    assert {w.max_builds for w in workers.values()} == {1}
    assert repr(workers["host-a-alpha-1"].password) == "Secret(worker-host-a)"
    assert repr(workers["host-ab-beta-0"].password) == "Secret(worker-host-ab)"
    props = workers["host-a-alpha-1"].properties
    assert (props[HOST_PROPERTY], props[DEVICE_PROPERTY], props[DEVICE_INDEX_PROPERTY]) == ("host-a", "alpha", 1)


def test_each_unit_knows_its_hosts_build_slots_and_builders_ask_the_unit_at_each_request(dirs):
    cfg = config_for(dirs)
    workers = {w.workername: w for w in cfg["workers"]}

    # host-a runs one build per unit (not capped); host-ab has 2 units and max_builds 1. No Buildbot lock does it.
    assert {name: (w._config_kwargs["host"], w._config_kwargs["host_slots"]) for name, w in workers.items()} == {
        "host-a-alpha-0": ("host-a", None), "host-a-alpha-1": ("host-a", None),
        "host-ab-alpha-0": ("host-ab", 1), "host-ab-beta-0": ("host-ab", 1),
    }
    assert all(isinstance(w, HostUnitWorker) and w.access == [] for w in workers.values())
    assert {b.canStartBuild for b in cfg["builders"]} == {unit_can_start_build}


def test_host_without_password_file_is_left_out(dirs):
    os.unlink(dirs.secrets / "worker-host-ab")

    cfg = config_for(dirs)

    assert [w.workername for w in cfg["workers"]] == ["host-a-alpha-0", "host-a-alpha-1"]
    # beta only ran on host-ab, so it has no builder now.
    assert [b.name for b in cfg["builders"]] == ["alpha", "delta"]


def test_schedulers_per_active_backend(dirs):
    cfg = config_for(dirs)
    schedulers = {s.name: s for s in cfg["schedulers"]}

    # Only delta, of level L3, builds pull requests.
    assert set(schedulers) == {
        f"{kind}-{b}" for kind in ("upstream", "force", "bisect") for b in ("alpha", "beta", "delta")
    } | {"pr-delta"}
    assert isinstance(schedulers["pr-delta"], PullRequestScheduler)
    assert schedulers["pr-delta"].builderNames == ["delta"]
    for backend in ("alpha", "beta", "delta"):
        assert isinstance(schedulers[upstream_scheduler_name(backend)], AnyBranchScheduler)
        assert schedulers[upstream_scheduler_name(backend)].builderNames == [backend]
        assert isinstance(schedulers[force_scheduler_name(backend)], ForceScheduler)
        assert schedulers[force_scheduler_name(backend)].builderNames == [backend]
        assert isinstance(schedulers[bisect_scheduler_name(backend)], BisectScheduler)
        assert schedulers[bisect_scheduler_name(backend)].builderNames == [backend]


def change(branch, project="pytorch/pytorch"):
    return SimpleNamespace(
        branch=branch,
        project=project,
        repository="https://github.com/pytorch/pytorch.git",
        codebase="",
        category=None,
        properties=Properties(),
    )


def test_upstream_scheduler_takes_commits_on_the_backends_branches_only(dirs):
    write_backend(dirs.backends, "alpha", device="alpha", branches=["main", "release/2.5"])
    schedulers = {s.name: s for s in config_for(dirs, CRCR_UPSTREAM_BRANCHES="main,release/2.5")["schedulers"]}

    alpha = schedulers[upstream_scheduler_name("alpha")]._config_kwargs["change_filter"]
    assert alpha.filter_change(change("main"))
    assert alpha.filter_change(change("release/2.5"))
    assert not alpha.filter_change(change("gh/someone/1/head"))
    assert not alpha.filter_change(change("main", project="someone/fork"))
    beta = schedulers[upstream_scheduler_name("beta")]._config_kwargs["change_filter"]
    assert beta.filter_change(change("main"))
    assert not beta.filter_change(change("release/2.5"))


def test_change_source_polls_explicit_upstream_branches(dirs):
    cfg = config_for(dirs, CRCR_UPSTREAM_BRANCHES="main,release/2.5", CRCR_POLL_INTERVAL="30")

    (poller,) = cfg["change_source"]
    assert isinstance(poller, GitPoller)
    assert poller.name == "upstream"
    kwargs = poller._config_kwargs
    assert poller._config_args == ("https://github.com/pytorch/pytorch.git",)
    assert kwargs["branches"] == ["main", "release/2.5"]  # never True: pytorch has thousands of branches
    assert kwargs["project"] == "pytorch/pytorch"
    assert kwargs["pollInterval"] == 30


def reporters(cfg) -> list:
    return [s for s in cfg["services"] if isinstance(s, GitHubStatusPush)]


def test_no_github_reporter_without_the_token_secret(dirs):
    assert reporters(config_for(dirs)) == []


def test_no_github_reporter_when_the_token_is_empty(dirs):
    write_secret(dirs.secrets, GITHUB_TOKEN, "")

    assert reporters(config_for(dirs)) == []


def test_github_reporter_for_l2_and_up_backends_only(dirs):
    with_github_token(dirs)

    cfg = config_for(dirs, CRCR_GITHUB_API_URL="http://127.0.0.1:8999", CRCR_OUTBOX_RETRY_DELAY="5",
                     CRCR_OUTBOX_MAX_DELAY="300")
    (reporter,) = reporters(cfg)

    assert isinstance(reporter, GitHubStatusPush)
    kwargs = reporter._config_kwargs
    assert kwargs["token"] is None, "the outbox's sender reads the token when it posts"
    # beta is L1 (UI only), gamma has no builder.
    assert [g.builders for g in kwargs["generators"]] == [["alpha", "delta"], ["alpha", "delta"]]
    (sender,) = [s for s in cfg["services"] if isinstance(s, OutboxSender)]
    assert {k: sender._config_kwargs[k] for k in ("api_url", "retry_delay", "max_delay", "statuses", "app_id")} == {
        "api_url": "http://127.0.0.1:8999", "retry_delay": 5, "max_delay": 300, "statuses": True, "app_id": None}


def test_no_github_reporter_when_every_backend_is_l1(dirs):
    with_github_token(dirs)
    for name in ("alpha", "delta", "gamma"):
        write_backend(dirs.backends, name, level="L1", device="alpha")

    assert reporters(config_for(dirs)) == []


def test_silent_workers_are_dropped_after_missing_keepalives(dirs):
    (watch,) = [s for s in config_for(dirs, CRCR_WORKER_KEEPALIVE="7")["services"] if isinstance(s, SilentWorkerWatch)]

    assert watch._config_args == (7,)


def test_the_stale_watch_knows_each_active_backends_waits_and_the_units_of_each_device(dirs):
    write_backend(dirs.backends, "beta", level="L1", device="beta", stale_after=600)
    services = config_for(dirs, CRCR_TIMEOUT_GRACE="120")["services"]

    (presence,) = [s for s in services if isinstance(s, DevicePresence)]
    (watch,) = [s for s in services if isinstance(s, StaleWatch)]

    assert presence._config_args == ({"alpha": ["host-a-alpha-0", "host-a-alpha-1", "host-ab-alpha-0"],
                                      "beta": ["host-ab-beta-0"]},)
    backends, builders, grace, *_ = watch._config_args
    assert (sorted(backends, key=lambda b: b.name), grace) == ([  # gamma: no host offers its device
        WatchedBackend("alpha", stale_after=21600, reports=True),
        WatchedBackend("beta", stale_after=600, reports=False),
        WatchedBackend("delta", stale_after=21600, reports=True),
    ], 120)


def test_every_consumer_of_the_build_plan_loops_over_the_same_rows(dirs):
    """The builders, their Triggerables, the stale watch and the relay's worker come from one plan (plan/builds.py,
    whose rows tests/test_build_plan.py checks): a fanned-out backend with a build stage and a shared build."""
    shared = dirs.backends / "builds" / "torch-cpu.yaml"
    shared.parent.mkdir()
    shared.write_text("device: beta\nsteps: [make]\nartifacts: [dist/*]\n")
    write_backend(dirs.backends, "alpha", device="alpha", uses=["torch-cpu"],
                  build={"steps": ["make"], "artifacts": ["dist/*"]})
    cfg = config_for(dirs)
    plan = plan_builders(load_relay_config(settings_for(dirs)))

    (watch,) = [s for s in cfg["services"] if isinstance(s, StaleWatch)]
    assert [b.name for b in cfg["builders"]] == [row.name for row in plan] == [
        "alpha", "alpha (suites)", "alpha (build)", "beta", "delta", "torch-cpu (shared build)"]
    assert watch._config_args[1] == plan
    assert {s.name: s.builderNames for s in cfg["schedulers"] if isinstance(s, Triggerable)} == {
        "suites-alpha": ["alpha (suites)"], "build-alpha": ["alpha (build)"],
        "shared-torch-cpu": ["torch-cpu (shared build)"]}
    assert [w.name for w in cfg["workers"] if isinstance(w, LocalWorker)] == [RELAY_WORKER]


def test_the_health_figures_cover_every_backend_an_inactive_one_too(dirs):
    (health,) = [s for s in config_for(dirs)["services"] if isinstance(s, RelayHealth)]

    # gamma's device is on no host: its maintainers still find it on the health pages, inactive.
    assert [b["name"] for b in health._config_kwargs["backends"]] == ["alpha", "beta", "delta", "gamma"]


def test_ports_and_urls(dirs):
    cfg = config_for(dirs, CRCR_WEB_PORT="18010", CRCR_WORKER_PORT="19989")

    assert cfg["protocols"] == {"pb": {"port": "tcp:19989:interface=0.0.0.0"}}
    assert cfg["www"]["port"] == "tcp:18010:interface=127.0.0.1"
    assert cfg["buildbotURL"] == "http://localhost:18010/"
    assert cfg["collapseRequests"] is False


def test_invalid_backend_file_makes_buildbot_refuse_the_config(dirs):
    bad = write_backend(dirs.backends, "beta", level="L5", device="beta")

    with pytest.raises(ConfigErrors) as raised:
        config_for(dirs)

    assert raised.value.errors == [f"{bad}: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L5')"]


def test_at_start_an_invalid_backend_file_is_left_out_and_shown_on_the_home_page(dirs):
    bad = write_backend(dirs.backends, "beta", level="L5", device="beta")

    cfg = build_master_config(settings_for(dirs), leave_out_invalid=True)

    assert [b.name for b in cfg["builders"]] == ["alpha", "delta"]
    home = cfg["www"]["plugins"]["crcr"].shown
    assert home["left_out"] == [f"{bad}: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L5')"]
    assert [b["name"] for b in home["backends"]] == ["alpha", "delta", "gamma"]
    load_with_buildbot(cfg)


def test_the_ui_s_frontend_config_holds_none_of_the_relays_data(dirs):
    """Buildbot serves the frontend config to everyone (in index.html and as /config): the relay's upstream, backends
    and left-out files are the plugin's JSON's, which asks the Authz, and not in it."""
    write_backend(dirs.backends, "beta", level="L5", device="beta")
    cfg = build_master_config(settings_for(dirs), leave_out_invalid=True)
    master = SimpleNamespace(config=SimpleNamespace(buildbotURL=cfg["buildbotURL"], title=cfg["title"],
                                                    titleURL=cfg["titleURL"], multiMaster=False))

    frontend = serialize_www_frontend_config_dict_to_json(get_www_frontend_config_dict(master, cfg["www"]))

    assert json.loads(frontend)["plugins"]["crcr"] == {}
    assert not [word for word in ("pytorch/pytorch", "alpha", "delta", "gamma", "beta.yaml", "Test accelerator")
                if word in frontend]


def test_master_cfg_leaves_out_invalid_files_at_start_only(dirs, monkeypatch):
    """master.cfg is read again at each reconfig, while crcr's modules stay imported: that tells a start."""
    write_backend(dirs.backends, "beta", level="L5", device="beta")
    for var, value in {"CRCR_BACKENDS_DIR": dirs.backends, "CRCR_WORKERS_DIR": dirs.workers,
                       "CRCR_SECRETS_DIR": dirs.secrets}.items():
        monkeypatch.setenv(var, str(value))
    source = compile(MASTER_CFG.read_text(), str(MASTER_CFG), "exec")

    # In this test process crcr is imported already: as in a master that is reconfiguring.
    with pytest.raises(ConfigErrors):
        exec(source, {"__file__": str(MASTER_CFG)})
    monkeypatch.delitem(sys.modules, "crcr.buildmaster.masterconfig")
    started = {"__file__": str(MASTER_CFG)}
    exec(source, started)
    assert [b.name for b in started["BuildmasterConfig"]["builders"]] == ["alpha", "delta"]


def test_bad_settings_make_buildbot_refuse_the_config(dirs, monkeypatch):
    """master.cfg calls build_master_config() without settings: they come from the environment."""
    monkeypatch.setenv("CRCR_BACKENDS_DIR", str(dirs.backends))
    monkeypatch.setenv("CRCR_WEB_PORT", "abc")

    with pytest.raises(ConfigErrors) as raised:
        build_master_config()

    assert raised.value.errors == ["CRCR_WEB_PORT: should be a whole number (got 'abc')"]


def test_secret_readable_by_others_makes_buildbot_refuse_the_config(dirs):
    token = write_secret(dirs.secrets, GITHUB_TOKEN, "ghp_test\n", mode=0o644)

    with pytest.raises(ConfigErrors) as raised:
        config_for(dirs)

    assert raised.value.errors == [f"{token}: readable by others (mode 0644); run chmod 600 on it"]


def test_missing_secrets_directory_means_no_host_can_log_in_and_says_so(dirs):
    for secret in dirs.secrets.iterdir():
        secret.unlink()
    dirs.secrets.rmdir()

    with pytest.raises(ConfigErrors) as raised:
        config_for(dirs)

    assert raised.value.errors[0] == "no backend can run: no host that offers its device can log in"
    assert any("host-a.yaml: host left out: its password file" in e and "does not exist" in e for e in raised.value.errors)


def test_buildbot_loads_the_generated_config(dirs):
    with_github_token(dirs)

    master = load_with_buildbot(config_for(dirs))

    # The backends' builders, schedulers and workers only: the janitor is a service (no builder, no LocalWorker).
    assert [b.name for b in master.builders] == ["alpha", "beta", "delta"]
    assert sorted(master.schedulers) == sorted(
        [f"{kind}-{b}" for kind in ("upstream", "force", "bisect") for b in ("alpha", "beta", "delta")] + ["pr-delta"]
    )
    # Every force form acts on its own builders only (force_forms.py): Buildbot's would build any builderid's.
    forms = [s for s in master.schedulers.values() if isinstance(s, ForceScheduler)]
    assert len(forms) == 6 and all(isinstance(form, OwnBuildersForceScheduler) for form in forms)
    assert [w.workername for w in master.workers] == [
        "host-a-alpha-0", "host-a-alpha-1", "host-ab-alpha-0", "host-ab-beta-0"
    ]
    assert [c.name for c in master.change_sources] == ["upstream"]
    assert {type(s) for s in master.services.values()} == {
        OutboxStatusPush, OutboxSender, SilentWorkerWatch, RelayStore, RelayLeadership, CommitLedger,
        PullRequestRelay, DevicePresence, StaleWatch, CrossMasterWaker, OrphanedChildren, HistoryRecorder,
        RelayJanitor, RelayHealth, UpstreamMirror, UnitsResumed, LevelHistory, PyTorchRelayJobs,
        DisabledTestsFollower, QuarantineKeeper,
    }
    assert master.collapseRequests is False
    assert master.buildbotURL == "http://localhost:8010/"


def test_buildbot_loads_the_committed_config(tmp_path):
    """What `make demo` runs: the repository's own backends/, workers/ and settings, and its worker password."""
    from crcr.config.settings import load_settings

    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    write_worker_password(secrets, "demo-local")
    master = load_with_buildbot(build_master_config(load_settings(environ={"CRCR_SECRETS_DIR": str(secrets)})))

    # The demo backend builds once and fans out (backends/demo.yaml): its parent's builder, its children's, and its
    # build stage's.
    assert [b.name for b in master.builders] == ["demo", children_builder_name("demo"), build_builder_name("demo")]


def test_buildbot_has_no_warning_about_the_config(dirs):
    """E.g. a title over 18 characters, which Buildbot's UI replaces by 'Buildbot'."""
    with_github_token(dirs)
    cfg = config_for(dirs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MasterConfig.loadFromDict(cfg, "master.cfg")

    assert [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)] == []


def test_commits_link_to_the_configured_upstreams_web_view_and_builders_belong_to_the_upstream_project(dirs):
    cfg = config_for(dirs)  # master/settings.yaml's upstream: https://github.com/pytorch/pytorch.git
    assert cfg["revlink"]("abc123", "https://github.com/pytorch/pytorch.git") == \
        "https://github.com/pytorch/pytorch/commit/abc123"
    assert [p.name for p in cfg["projects"]] == ["pytorch/pytorch"]
    (health,) = [s for s in cfg["services"] if isinstance(s, RelayHealth)]
    assert health._config_kwargs["commit_url"] == "https://github.com/pytorch/pytorch/commit/"
    enterprise = config_for(dirs, CRCR_GITHUB_API_URL="https://ghe.example.com/api/v3", CRCR_GITHUB_REPO="ml/torch",
                            CRCR_UPSTREAM_URL="git@ghe.example.com:ml/torch.git")
    assert enterprise["revlink"]("abc123", "") == "https://ghe.example.com/ml/torch/commit/abc123"


def test_commits_of_an_upstream_with_no_web_view_link_nowhere(dirs):
    """The demo's upstream is a local repository: its commits are on no GitHub page (nor is a mirror's, elsewhere)."""
    for upstream in ("file:///srv/mirror/pytorch.git", "https://git.example.org/mirror/pytorch.git"):
        cfg = config_for(dirs, CRCR_UPSTREAM_URL=upstream)
        assert cfg["revlink"]("abc123", upstream) is None
        (health,) = [s for s in cfg["services"] if isinstance(s, RelayHealth)]
        assert health._config_kwargs["commit_url"] is None
        # The home page calls it by its URL, and links no commit (plugins/crcr/api/relay).
        shown = cfg["www"]["plugins"]["crcr"].shown["upstream"]
        assert (shown["name"], shown["commit_url"]) == (upstream, None)


def test_the_upstream_projects_description_shows_no_token_of_its_url(dirs):
    """Buildbot's Projects page shows the project's description to anyone."""
    cfg = config_for(dirs, CRCR_UPSTREAM_URL="https://x-access-token:s3cret@git.example.org/mirror/pytorch.git")
    [project] = cfg["projects"]
    assert "s3cret" not in project.description and "git.example.org/mirror/pytorch.git" in project.description


def test_a_pytest_suite_ships_the_plugin_and_its_selection_and_runs_pytest_with_them(dirs):
    write_file(dirs.backends / "skips.txt", "test/test_ops.py::TestOps::test_flaky_here\n")
    write_backend(dirs.backends, "alpha", device="alpha", suites=[
        {"name": "ops", "pytest": {"files": ["test/test_ops.py", "test/nn/test_*.py"], "keyword": "not slow",
                                   "deselect": ["test/test_ops.py::TestOps::test_huge"], "skip_list": "skips.txt"},
         "stall_timeout": 600, "mode": "validate"},
    ])
    steps = steps_by_name(builders_by_name(config_for(dirs))["alpha"])

    prepare = steps["prepare build folder"].kwargs
    assert prepare["results_dir"] == "results"
    # no command suite to shield
    assert sorted(prepare["shipped"]) == ["crcr/crcr_order.py", "crcr/crcr_selection.py", "crcr/ops.json"]
    assert all(prepare["shipped"][f"crcr/{plugin.name}"] == plugin.read_text() for plugin in PLUGIN_FILES)
    spec = json.loads(prepare["shipped"]["crcr/ops.json"])
    assert spec == {"device": "alpha", "files": {},
                    "skip": [{"nodeid": "test/test_ops.py::TestOps::test_flaky_here", "reason": "skips.txt"}]}
    suite = steps["suite ops"].kwargs
    assert suite["command"] == (
        "python -m crcr_selection test/test_ops.py test/nn/test_*.py -o junit_family=xunit1 "
        "--junitxml=../results/ops.xml -rfE --crcr-running=../results/ops.running --crcr-reruns=1 "
        "--crcr-rerun-limit=200 -k 'not slow' --deselect test/test_ops.py::TestOps::test_huge"
    )
    assert suite["timeout"] == 600  # seconds without output before the run counts as stalled
    assert (suite["mode"], suite["reruns"], suite["is_pytest"]) == ("validate", 1, True)
    assert suite["selection_report"] == "../results/ops.selection.json"  # the plugin's, beside --junitxml
    assert {"CRCR_SELECTION", "PYTHONPATH"} <= set(suite["env"])
    assert "PYTEST_ADDOPTS" not in suite["env"]  # the plugin's runner pins pytest to the checkout itself


def test_a_command_suite_runs_pytest_with_its_rootdir_at_the_checkout_and_no_enclosing_configuration(dirs):
    write_backend(dirs.backends, "alpha", device="alpha", suites=[
        {"name": "smoke", "command": "python -m pytest test/test_smoke.py --junitxml=$CRCR_RESULTS_DIR/smoke.xml"},
        {"name": "ops", "pytest": {"files": ["test/test_ops.py"]}},
    ], fan_out=False)
    write_backend(dirs.backends, "beta", device="beta", env={"PYTEST_ADDOPTS": "-p no:cacheprovider"},
                  suites=[{"name": "smoke", "command": "python -m pytest test/test_smoke.py"}])
    builders = builders_by_name(config_for(dirs))
    alpha, beta = steps_by_name(builders["alpha"]), steps_by_name(builders["beta"])
    worker = Properties(builddir="/srv/units/host-a-alpha-0/alpha")

    assert alpha["prepare build folder"].kwargs["shipped"][STOP_CONFIG_FILE] == STOP_CONFIG
    # The worker puts its own PYTEST_ADDOPTS in place of ${PYTEST_ADDOPTS}; a backend's own comes instead.
    assert rendered(alpha["suite smoke"].kwargs["env"]["PYTEST_ADDOPTS"], worker) == (
        "--rootdir=/srv/units/host-a-alpha-0/alpha/upstream -o junit_family=xunit1 ${PYTEST_ADDOPTS}")
    assert rendered(beta["suite smoke"].kwargs["env"]["PYTEST_ADDOPTS"], worker) == (
        "--rootdir=/srv/units/host-a-alpha-0/alpha/upstream -o junit_family=xunit1 -p no:cacheprovider")
    assert "PYTEST_ADDOPTS" not in alpha["suite ops"].kwargs["env"]


def rendered(value, properties: Properties):
    """`value` as Buildbot renders it for a build with `properties` (synchronously: no renderer here waits)."""
    result = []
    properties.render(value).addCallback(result.append)
    return result[0]


def test_the_grid_shows_more_commits_than_buildbots_five(dirs):
    """A backend builds one commit of several (coalescing) and a forced old commit takes a column: Buildbot's default
    of 5 revisions left backends out of the grid. The UI's frontend config carries the relay's default."""
    cfg = build_master_config(settings_for(dirs))
    master = SimpleNamespace(config=SimpleNamespace(buildbotURL=cfg["buildbotURL"], title=cfg["title"],
                                                    titleURL=cfg["titleURL"], multiMaster=False))

    frontend = json.loads(serialize_www_frontend_config_dict_to_json(get_www_frontend_config_dict(master, cfg["www"])))

    assert frontend["ui_default_config"] == {"Grid.revisionLimit": 30}
