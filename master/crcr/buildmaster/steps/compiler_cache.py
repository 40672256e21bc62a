"""A build's compiler cache (`compiler_cache:` of a shared build or a build stage, docs/backends.md "What a build
costs"): the environment its steps compile in, the step that wraps the host's compilers before them, and the step
that reads this build's hits and misses after them.

The cache lives in the host's folder (crcr-host up makes it, beside the artifacts' cache: docs/lab-admins.md),
shared by every unit of the host and kept across commits; its base folder is the build's checkout, so that two
units' builds, in two folders, hit the same entries. The compilers are checked by their content, not their time."""

from __future__ import annotations

import hashlib
import json
import posixpath

from buildbot.plugins import util
from buildbot.process.buildstep import BuildStep
from buildbot.process.remotecommand import RemoteShellCommand
from buildbot.process.results import SUCCESS, WARNINGS

from crcr.buildmaster.steps.artifacts import in_host_folder
from crcr.config.builds import CompilerCache
from crcr.health.stage_builds import cache_figures_text
from crcr.names import COMPILER_CACHE_PROPERTY
from crcr.shipped import COMPILER_CACHE_TOOL

WRAPPERS_DIR = "compiler-cache/bin"  # in the build folder: first on the build's PATH
STATS_LOG = "ccache-stats.log"  # in the results folder, which each build starts empty


def host_folder(subfolder: str):
    """A renderable: `subfolder` of the host's folder, as the artifacts' cache is found."""
    return util.Transform(lambda builddir: posixpath.normpath(in_host_folder(builddir, subfolder)),
                          util.Property("builddir"))


def in_build_folder(path: str):
    return util.Interpolate(f"%(prop:builddir)s/{path}")


def compiler_cache_environment(cache: CompilerCache, checkout: str, results: str, remote: str | None) -> dict:
    """What a build's steps need to compile through `cache`; `checkout` and `results`: folders of the build
    folder; `remote`: the relay's one cache for several hosts (the compiler_cache_remote setting)."""
    path = {"PATH": util.Interpolate(f"%(prop:builddir)s/{WRAPPERS_DIR}:${{PATH}}")}  # ${PATH}: the worker's
    if cache.kind == "ccache":
        return {**path, "CCACHE_DIR": host_folder("cache/ccache"), "CCACHE_BASEDIR": in_build_folder(checkout),
                "CCACHE_NOHASHDIR": "true", "CCACHE_COMPILERCHECK": "content", "CCACHE_MAXSIZE": cache.max_size,
                "CCACHE_STATSLOG": in_build_folder(f"{results}/{STATS_LOG}"),
                **({"CCACHE_REMOTE_STORAGE": remote} if remote else {})}
    return {**path, "SCCACHE_DIR": host_folder("cache/sccache"), "SCCACHE_BASEDIRS": in_build_folder(checkout),
            "SCCACHE_CACHE_SIZE": cache.max_size, "SCCACHE_IDLE_TIMEOUT": "0",
            # Its direct mode trusts a header's size and time: a header rewritten within a second (a checkout) was
            # taken as unchanged, a stale object. ccache's direct mode refuses headers that young.
            "SCCACHE_DIRECT": "false",
            # The build's own server: its figures are this build's. A short path: a socket's is at most 107 bytes.
            "SCCACHE_SERVER_UDS": util.Transform(lambda builddir: f"/tmp/crcr-sccache-{_digest(builddir)}.sock",
                                                 util.Property("builddir")),
            **({"SCCACHE_WEBDAV_ENDPOINT": remote} if remote else {})}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tool_command(shipped_dir: str, *arguments: str) -> list:
    """The shipped tool's command line; `shipped_dir`: the build folder's folder it is shipped into."""
    return ["python3", util.Interpolate(f"%(prop:builddir)s/{shipped_dir}/{COMPILER_CACHE_TOOL.name}"), *arguments]


class CompilerCacheFigures(BuildStep):
    """This build's hits and misses, in its summary and its COMPILER_CACHE_PROPERTY. Runs whether the build
    succeeded or not (a failed build's figures say what it compiled); WARNINGS, never a failure, when the unit
    cannot say them."""

    def __init__(self, cache: CompilerCache, shipped_dir: str, env: dict, **kwargs):
        self.cache, self.shipped_dir, self.env = cache, shipped_dir, env
        super().__init__(alwaysRun=True, flunkOnFailure=False, warnOnFailure=True, **kwargs)

    async def run(self):
        log = await self.addLog("stdio")
        env = await self.build.render(self.env)
        command = RemoteShellCommand(self.workdir, await self.build.render(tool_command(self.shipped_dir, "figures", self.cache.kind)),
                                     env=env, collectStdout=True, logEnviron=False)
        command.useLog(log, False)
        await self.runCommand(command)
        try:
            figures = json.loads(command.stdout)
            figures = {"kind": self.cache.kind, "hits": int(figures["hits"]), "misses": int(figures["misses"])}
        except (ValueError, TypeError, KeyError):
            self.descriptionDone = [f"{self.cache.kind}: no figures (its log says why)"]
            return WARNINGS
        self.setProperty(COMPILER_CACHE_PROPERTY, figures, "crcr")
        self.descriptionDone = [cache_figures_text(figures)]
        return SUCCESS
