"""Which builds the GitHub reporters post for, as Buildbot's generators decide it: each build (and each build
request) is checked by its builder and the scheduler that asked for it, both as Buildbot hands them over.
Commit statuses for upstream, forced and pull request builds; with a GitHub App, check runs for the pull request
builds of L3/L4 backends instead of their statuses."""

from __future__ import annotations

import pytest
from buildbot.reporters.github import GitHubStatusPush

from configfiles import make_dirs, settings_for, write_backend, write_secret, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.config.secretfiles import GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_TOKEN
from crcr.github.check_runs import GitHubCheckRuns
from crcr.names import bisect_scheduler_name, force_scheduler_name, pull_request_scheduler_name, upstream_scheduler_name


def reporters(tmp_path, level: str = "L2", app: bool = False, token: bool = True) -> list:
    """The GitHub reporters of a relay with one backend, alpha, of `level`."""
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "alpha", level=level, device="alpha")
    write_worker(dirs.workers, "host-a", devices={"alpha": 1})
    write_worker_password(dirs.secrets, "host-a")
    if token:
        write_secret(dirs.secrets, GITHUB_TOKEN, "ghp_test\n")
    if app:
        write_secret(dirs.secrets, GITHUB_APP_ID, "12345\n")
        write_secret(dirs.secrets, GITHUB_APP_PRIVATE_KEY, "-----BEGIN RSA PRIVATE KEY-----\n...\n")
    services = build_master_config(settings_for(dirs))["services"]
    return [s for s in services if isinstance(s, (GitHubStatusPush, GitHubCheckRuns))]


def posted_for(reporter, scheduler: str | None) -> list[bool]:
    return [g.is_message_needed_by_props(build(scheduler)) for g in reporter._config_kwargs["generators"]]


def build(scheduler: str | None) -> dict:
    """What a generator is given of a build or of a build request: its builder and properties."""
    properties = {"branch": ("main", "Build")}
    if scheduler is not None:
        properties["scheduler"] = (scheduler, "Scheduler")  # set by every Buildbot scheduler
    return {"builder": {"name": "alpha", "tags": []}, "properties": properties}


@pytest.mark.parametrize("scheduler", [upstream_scheduler_name("alpha"), force_scheduler_name("alpha")])
def test_upstream_and_forced_builds_get_statuses(tmp_path, scheduler):
    (statuses,) = reporters(tmp_path)
    assert posted_for(statuses, scheduler) == [True, True]


# A bisection build's verdict covers the few tests it ran, not the commit: the bisection posts the
# commit's verdict itself. None: a build set asked for without a scheduler's property.
@pytest.mark.parametrize("scheduler", [bisect_scheduler_name("alpha"), None])
def test_bisection_builds_get_no_status(tmp_path, scheduler):
    (statuses,) = reporters(tmp_path)
    assert posted_for(statuses, scheduler) == [False, False]


@pytest.mark.parametrize("level", ["L3", "L4"])
def test_pull_request_builds_of_l3_and_l4_get_statuses_without_an_app(tmp_path, level):
    (statuses,) = reporters(tmp_path, level=level)
    assert posted_for(statuses, pull_request_scheduler_name("alpha")) == [True, True]


@pytest.mark.parametrize("level", ["L3", "L4"])
def test_with_an_app_pull_request_builds_get_check_runs_instead_of_statuses(tmp_path, level):
    statuses, check_runs = reporters(tmp_path, level=level, app=True)

    assert isinstance(check_runs, GitHubCheckRuns)
    assert posted_for(statuses, pull_request_scheduler_name("alpha")) == [False, False]
    assert posted_for(check_runs, pull_request_scheduler_name("alpha")) == [True, True]
    # Upstream and forced commits keep their statuses (the ledger posts covered and bisected commits as statuses).
    for scheduler in (upstream_scheduler_name("alpha"), force_scheduler_name("alpha")):
        assert posted_for(statuses, scheduler) == [True, True]
        assert posted_for(check_runs, scheduler) == [False, False]


def test_check_runs_need_no_status_token(tmp_path):
    (check_runs,) = reporters(tmp_path, level="L4", app=True, token=False)
    assert posted_for(check_runs, pull_request_scheduler_name("alpha")) == [True, True]


def test_an_l2_backend_gets_no_check_runs_even_with_an_app(tmp_path):
    (statuses,) = reporters(tmp_path, level="L2", app=True)
    assert isinstance(statuses, GitHubStatusPush)
