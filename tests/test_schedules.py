"""`schedule:` of a backend (a branch's head on a schedule instead of every commit): what the file may say, and the
Buildbot scheduler the relay makes of it. The firing and building are end to end (test_schedules_e2e.py)."""

from __future__ import annotations

import pytest
from buildbot.schedulers.timed import Nightly, Periodic

from configfiles import make_dirs, settings_for, write_backend
from crcr.buildmaster.schedulers.scheduled import Head, NightlyHead, PeriodicHead
from crcr.buildmaster.schedulers.upstream import UpstreamScheduler, upstream_scheduler
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config


def loaded(tmp_path, **fields):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", **fields)
    settings = settings_for(dirs)
    return load_relay_config(settings).backends[0], settings


def test_nightly_builds_the_nightly_branchs_head_once_a_day_at_its_hour(tmp_path):
    backend, settings = loaded(tmp_path, schedule={"follow": "nightly", "hour": 5})
    scheduler = upstream_scheduler(backend, settings)
    assert isinstance(scheduler, NightlyHead) and isinstance(scheduler, Nightly)
    assert (scheduler._config_kwargs["hour"], scheduler._config_kwargs["minute"]) == (5, 0)
    assert scheduler.head == Head("nightly", settings.upstream_url, settings.github_repo)


def test_periodic_builds_viable_strict_by_default_every_six_hours(tmp_path):
    backend, settings = loaded(tmp_path, schedule={"follow": "periodic"})
    scheduler = upstream_scheduler(backend, settings)
    assert isinstance(scheduler, PeriodicHead) and isinstance(scheduler, Periodic)
    assert scheduler._config_kwargs["periodicBuildTimer"] == 21600
    assert scheduler.head.branch == "viable/strict"
    assert loaded(tmp_path / "main", schedule={"follow": "periodic", "branch": "main", "every": 3600})[0] \
        .schedule.branch == "main"


def test_without_a_schedule_every_commit_is_built(tmp_path):
    backend, settings = loaded(tmp_path)
    assert type(upstream_scheduler(backend, settings)) is UpstreamScheduler


@pytest.mark.parametrize("schedule, message", [
    ({"follow": "weekly"}, "schedule.follow: should be 'nightly' or 'periodic' (got 'weekly')"),
    ({"follow": "nightly", "every": 60}, "every is for follow: periodic, not nightly"),
    ({"follow": "periodic", "hour": 3}, "hour is for follow: nightly, not periodic"),
    ({"follow": "nightly", "hour": 24}, "schedule.hour: must be at most 23 (got 24)"),
    ({"follow": "nightly", "hour": True}, "schedule.hour: should be a whole number (got True)"),
    ({"follow": "periodic", "every": 0}, "schedule.every: should be greater than 0 (got 0)"),
    ({"follow": "periodic", "branch": "../x"}, "schedule.branch"),
])
def test_a_bad_schedule_is_refused_naming_the_file_and_field(tmp_path, schedule, message):
    with pytest.raises(ConfigError) as raised:
        loaded(tmp_path, schedule=schedule)
    assert "spyre.yaml" in str(raised.value) and message in str(raised.value), str(raised.value)
