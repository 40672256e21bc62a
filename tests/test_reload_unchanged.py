"""Unit tests of what a reload of unchanged files spares (a reconfig of a large relay): the models of the files whose
text is unchanged are the last load's, everything else is checked as at the first load, and Buildbot finds the
workers and services made of them equal to the running ones, so that it leaves them be."""

from __future__ import annotations

import pytest
from buildbot.util import ComparableMixin

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config


@pytest.fixture
def relay_dirs(tmp_path):
    dirs = make_dirs(tmp_path)
    for name in ("alpha", "beta"):
        write_backend(dirs.backends, name)
    write_worker(dirs.workers, "box", devices={"demo": 2})
    write_worker_password(dirs.secrets, "box")
    return dirs


def test_a_reload_of_unchanged_files_keeps_their_models(relay_dirs):
    settings = settings_for(relay_dirs)
    first, second = load_relay_config(settings), load_relay_config(settings)
    assert all(a is b for a, b in zip(first.backends + first.hosts, second.backends + second.hosts))


def test_a_changed_file_is_read_again_and_the_others_kept(relay_dirs):
    settings = settings_for(relay_dirs)
    first = load_relay_config(settings)
    write_backend(relay_dirs.backends, "beta", timeout=900)
    second = load_relay_config(settings)
    assert second.backends[0] is first.backends[0]
    assert second.backends[1].timeout == 900


def test_a_file_broken_since_the_last_load_is_refused(relay_dirs):
    settings = settings_for(relay_dirs)
    load_relay_config(settings)
    write_backend(relay_dirs.backends, "beta", timout=900)
    with pytest.raises(ConfigError, match="beta.yaml: timout: unknown key"):
        load_relay_config(settings)


def test_an_unchanged_text_behind_a_link_out_of_the_folder_is_refused(relay_dirs, tmp_path):
    settings = settings_for(relay_dirs)
    load_relay_config(settings)
    beta = relay_dirs.backends / "beta.yaml"
    outside = tmp_path / "outside.yaml"
    outside.write_text(beta.read_text())
    beta.unlink()
    beta.symlink_to(outside)
    with pytest.raises(ConfigError, match="beta.yaml: leads outside"):
        load_relay_config(settings)


def test_a_reconfig_of_unchanged_files_leaves_every_worker_and_service_be(relay_dirs):
    """Buildbot reconfigures a worker or service only when its sibling in the new configuration differs; one that
    never compares equal is reconfigured at every reconfig, on a large relay hundreds of them."""
    settings = settings_for(relay_dirs)
    running, new = build_master_config(settings), build_master_config(settings)
    for kind in ("workers", "services"):
        changed = [old.name for old, sibling in zip(running[kind], new[kind], strict=True)
                   if not ComparableMixin.isEquivalent(sibling, old)]
        assert changed == [], kind
