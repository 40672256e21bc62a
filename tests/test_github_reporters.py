"""Which builds the GitHub reporter posts a status for, as Buildbot's generators decide it: each build (and each
build request) is checked by its builder and the scheduler that asked for it, both as Buildbot hands them over."""

from __future__ import annotations

import pytest
from buildbot.reporters.github import GitHubStatusPush

from configfiles import make_dirs, settings_for, write_backend, write_secret, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.names import bisect_scheduler_name, force_scheduler_name, upstream_scheduler_name


@pytest.fixture
def generators(tmp_path) -> list:
    """The generators of the reporter of a relay with one L2 backend, alpha."""
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "alpha", level="L2", device="alpha")
    write_worker(dirs.workers, "host-a", devices={"alpha": 1})
    write_worker_password(dirs.secrets, "host-a")
    write_secret(dirs.secrets, GITHUB_TOKEN, "ghp_test\n")
    (reporter,) = [s for s in build_master_config(settings_for(dirs))["services"] if isinstance(s, GitHubStatusPush)]
    return reporter._config_kwargs["generators"]


def build(scheduler: str | None) -> dict:
    """What a generator is given of a build or of a build request: its builder and properties."""
    properties = {"branch": ("main", "Build")}
    if scheduler is not None:
        properties["scheduler"] = (scheduler, "Scheduler")  # set by every Buildbot scheduler
    return {"builder": {"name": "alpha", "tags": []}, "properties": properties}


@pytest.mark.parametrize("scheduler", [upstream_scheduler_name("alpha"), force_scheduler_name("alpha")])
def test_upstream_and_forced_builds_get_statuses(generators, scheduler):
    assert [g.is_message_needed_by_props(build(scheduler)) for g in generators] == [True, True]


# A bisection build's verdict covers the few tests it ran, not the commit: the bisection posts the
# commit's verdict itself. None: a build set asked for without a scheduler's property.
@pytest.mark.parametrize("scheduler", [bisect_scheduler_name("alpha"), None])
def test_bisection_builds_get_no_status(generators, scheduler):
    assert [g.is_message_needed_by_props(build(scheduler)) for g in generators] == [False, False]
