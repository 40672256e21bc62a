"""An upstream that stops answering, behind ssh (buildmaster/changes/upstream_mirror.py's SILENT_AFTER): a module of its
own, apart from test_upstream_mirror.py, as each waits out the bound and the test processes take modules whole."""

from __future__ import annotations

import os
import time

import pytest

from crcr.buildmaster.changes import upstream_mirror as upstream_mirror_module
from crcr.buildmaster.changes.revisions import RevisionError
from harness import alive, wait_until
from test_upstream_mirror import MirrorTestCase

pytestmark = pytest.mark.waits  # each test waits out the bound, 2 s here


class SilentUpstreamTest(MirrorTestCase):
    """An upstream that stops answering, behind ssh: git asking it is stopped once silent for a while (2 s here)."""

    timeout = 60  # Buildbot makes trial's 5 s: these wait out the bound, on a machine that may be loaded

    def ssh_upstream(self, stalled: list[int]) -> str:
        """The upstream reached over ssh, through a stand-in for ssh that runs the remote command on this machine; the
        connections numbered in `stalled` (from 1) stay open and say nothing, as with a host that stopped answering.
        Each stalled connection's pid is appended to stalled.pids."""
        ssh = self.root / "stalling-ssh"
        calls = self.root / "ssh.calls"
        ssh.write_text(f"""#!/bin/sh
# git runs it as: stalling-ssh HOST COMMAND (GIT_SSH_VARIANT=simple)
echo call >> {calls}
case " {' '.join(map(str, stalled))} " in
*" $(wc -l < {calls}) "*) sleep 600 & echo $! >> {self.root / 'stalled.pids'}; wait ;;
*) exec sh -c "$2" ;;
esac
""")
        ssh.chmod(0o755)
        for name, value in (("GIT_SSH_COMMAND", str(ssh)), ("GIT_SSH_VARIANT", "simple")):
            self.addCleanup(os.environ.pop, name, None)
            os.environ[name] = value
        self.patch(upstream_mirror_module, "SILENT_AFTER", 2)
        return f"ssh://upstream.example/{self.upstream.bare}"

    def assert_stalled_connections_ended(self) -> None:
        """What the stand-in for ssh started is killed with git, not left holding the connection."""
        pids = [int(pid) for pid in (self.root / "stalled.pids").read_text().split()]
        wait_until(lambda: not any(map(alive, pids)), 10, "the stalled ssh to end", interval=0.05)

    async def assert_refused_within_the_bound(self, asked, expected: str) -> None:
        began = time.monotonic()
        with self.assertRaises(RevisionError) as refused:
            await asked
        self.assertEqual(str(refused.exception), expected)
        self.assertLess(time.monotonic() - began, 30, "not stopped once silent")
        self.assert_stalled_connections_ended()

    async def test_an_upstream_that_stops_answering_is_given_up_naming_it_and_the_bound(self):
        url = self.ssh_upstream(stalled=[1])
        mirror = await self.mirror_of(url)

        await self.assert_refused_within_the_bound(
            mirror.resolve(self.second, ["main"]),
            f"could not fetch main from upstream {url}: git gave no sign of progress for 2 s and was stopped")

    async def test_a_fetch_that_stalls_after_upstream_listed_its_branches_is_given_up_and_the_next_fetch_works(self):
        url = self.ssh_upstream(stalled=[2])  # ls-remote answers, the fetch after it stalls; the next ones answer
        mirror = await self.mirror_of(url)

        await self.assert_refused_within_the_bound(
            mirror.resolve(self.second, ["main"]),
            f"could not fetch main from upstream {url}: git gave no sign of progress for 2 s and was stopped")
        self.assertEqual((await mirror.resolve(self.second, ["main"])).sha, self.second)

    async def test_a_branch_name_asked_of_an_upstream_that_stops_answering_is_refused_naming_it(self):
        url = self.ssh_upstream(stalled=[1])
        mirror = await self.mirror_of(url)

        await self.assert_refused_within_the_bound(
            mirror.resolve("main", ["main"]),
            f"could not ask upstream {url} for branch 'main': git gave no sign of progress for 2 s and was stopped")
