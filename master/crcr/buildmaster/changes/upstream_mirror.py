"""The master's own copy of upstream: where force and bisect forms, the bisector, baselines and the covered-commits
step look up commits, on every master of a cluster.

Not the GitPoller's bare repository, though it holds the same commits: the poller is a clustered service, so it
runs on one master only (the others never have its folder, and a master taking it over has a stale copy), and it
fetches into its folder when it likes, with an automatic gc, which nothing else may time or serialize. So each
master keeps a bare repository of its own (UPSTREAM_MIRROR_DIR in its directory; the polling master holds
upstream's objects twice), created on first need and fetched on demand: a question it cannot answer (a sha it
lacks, a range it has no history for) fetches the followed branches once and is asked again. Every fetch and
gc runs under one lock, so that concurrent forms do one fetch and `gc --auto` never runs beside a fetch.

Kept bounded: the followed branches only (a branch no longer followed is deleted), `--prune`, no tags, the pull
requests' refs of the newest PULL_REQUESTS_KEPT pull requests only (an older one is fetched again when asked).

Every git command asking upstream (ls-remote, fetch) is stopped once it has said nothing for SILENT_AFTER seconds,
whatever the transport (https, ssh, git://, a file path): an upstream that stops answering would otherwise hold
the lock, and so every form, bisection and baseline of the master, for as long as the connection stays open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from buildbot.util import service
from twisted.internet import defer, error, protocol
from twisted.python import log

from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes.revisions import NotFetched, RevisionError, run_git
from crcr.names import UPSTREAM_MIRROR_DIR, UPSTREAM_MIRROR_SERVICE, pull_request_ref

# Where the relay keeps each pull request's head, and its base when the followed branch lacked it: a namespace of
# its own, which the fetch of the followed branches neither writes nor prunes.
PULL_REQUEST_REFS = "refs/crcr/pull"
PULL_REQUEST_BASE_REFS = "refs/crcr/pull-base"
PULL_REQUESTS_KEPT = 100  # an older pull request's head is fetched again when a build asks for it
# Never FETCH_HEAD (nothing reads it); never an automatic gc inside a fetch: gc runs apart, under the lock. Its
# progress (on stderr, which nothing else is written to but errors) shows that a long fetch is still moving: a first
# fetch of PyTorch's history takes minutes.
FETCH = ["fetch", "--quiet", "--progress", "--no-tags", "--no-write-fetch-head", "--no-auto-gc"]
# Seconds without a byte from git asking upstream before it is stopped.
SILENT_AFTER = 60
# Runs git in a session of its own: stopping it kills its process group, so what it started too (ssh, a transport
# helper, upload-pack), which would otherwise keep its output open.
IN_OWN_SESSION = "import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])"


def upstream_mirror(master) -> UpstreamMirror:
    return master.service_manager.namedServices[UPSTREAM_MIRROR_SERVICE]


class UpstreamMirror(service.BuildbotService):
    name = UPSTREAM_MIRROR_SERVICE

    def __init__(self, *args, **kwargs):
        self._lock = defer.DeferredLock()
        self.fetches = 0  # of the followed branches since the start: a question asked before one needs no other
        self._fetch_failure: str | None = None  # why the latest of them failed
        super().__init__(*args, **kwargs)

    def checkConfig(self, upstream_url: str, branches: list[str]):
        pass

    def reconfigService(self, upstream_url: str, branches: list[str]):
        self.upstream_url, self.branches = upstream_url, list(branches)

    @property
    def path(self) -> str:
        return os.path.join(self.master.basedir, UPSTREAM_MIRROR_DIR)

    # --- the questions ---

    async def answer(self, question):
        """What `question(path)` answers of the mirror; when it raises NotFetched, asked again after a fetch of the
        followed branches (one fetch for the questions waiting together). A fetch that fails raises RevisionError
        naming upstream."""
        fetches_before = self.fetches
        await self._created()
        try:
            return await question(self.path)
        except NotFetched:
            await self._fetch_branches_unless_done_since(fetches_before)
            return await question(self.path)

    async def resolve(self, typed, branches: list[str]) -> revisions.Resolved:
        """What a person typed as a revision, as an exact commit of `branches`; refused before the mirror is touched
        when it names no commit or branch."""
        revision = revisions.typed_revision(typed)
        return await self.answer(
            lambda path: revisions.resolve(revision, self.upstream_url, path, branches, self._git_upstream))

    def first_parent_range(self, good: str, bad: str):
        return self.answer(lambda path: revisions.first_parent_range(good, bad, path))

    def describe_commit(self, sha: str):
        return self.answer(lambda path: revisions.describe_commit(sha, path))

    def first_parent_ancestors(self, sha: str, count: int):
        return self.answer(lambda path: defer.ensureDeferred(revisions.first_parent_ancestors(sha, count, path)))

    def changes_between(self, old: str, new: str):
        return self.answer(lambda path: defer.ensureDeferred(revisions.changes_between(old, new, path)))

    async def pull_request_merge_base(self, number: int, head_sha: str, base_sha: str) -> str:
        """The commit where pull request `number`'s head left its base branch (git merge-base), its head and base
        fetched first when the mirror lacks them."""
        await self.fetch_pull_request(number, head_sha, base_sha)
        code, out, err = await run_git(["merge-base", head_sha, base_sha], self.path)
        if code != 0:
            raise RevisionError(f"pull request #{number}: its head {head_sha[:10]} and base {base_sha[:10]} "
                                f"have no merge base{': ' + err if err else ''}")
        return out

    async def fetch_pull_request(self, number: int, head_sha: str, base_sha: str) -> None:
        """Fetch pull request `number`'s head from upstream's refs/pull/<number>/head (no access to the fork needed),
        and its base commit; only what the mirror lacks, so nothing when it has both."""
        for what, sha in (("head", head_sha), ("base", base_sha)):
            if not revisions.SHA.match(sha):
                raise RevisionError(f"pull request #{number}: its {what} '{sha}' is not a commit sha")
        await self._created()
        # (what it is, its commit, the refspec fetching it)
        wanted = [(f"its head {head_sha[:10]} ({pull_request_ref(number)})", head_sha,
                   f"+{pull_request_ref(number)}:{PULL_REQUEST_REFS}/{number}"),
                  (f"its base {base_sha[:10]}", base_sha, f"+{base_sha}:{PULL_REQUEST_BASE_REFS}/{number}")]
        missing = await self._lacking(wanted)
        if not missing:
            return
        async with self._lock:
            code, _, err = await self._git_upstream([*FETCH, self.upstream_url,
                                                     *(refspec for _, _, refspec in missing), "--"])
            await self._tidy()
        still = await self._lacking(missing)
        if still:
            why = f": {err}" if code != 0 else ""
            raise RevisionError(f"pull request #{number}: could not fetch {' and '.join(what for what, _, _ in still)} "
                                f"from {self.upstream_url}{why}")

    async def _lacking(self, wanted: list[tuple[str, str, str]]):
        """Those of `wanted` whose commit the mirror does not have."""
        lacking = []
        for entry in wanted:
            code, _, _ = await run_git(["cat-file", "-e", f"{entry[1]}^{{commit}}"], self.path)
            if code != 0:
                lacking.append(entry)
        return lacking

    # --- the repository ---

    async def _created(self) -> None:
        if os.path.isdir(self.path):
            return
        async with self._lock:  # two first questions create it once
            if os.path.isdir(self.path):
                return
            code, _, err = await run_git(["init", "--quiet", "--bare", self.path], None)
            if code != 0:
                raise RevisionError(f"could not create the relay's copy of upstream in {self.path}: {err}")

    async def _fetch_branches_unless_done_since(self, fetches_before: int) -> None:
        async with self._lock:
            if self.fetches == fetches_before:  # else one began after the question was asked: it holds the answer
                self.fetches += 1
                self._fetch_failure = await self._fetch_branches()
                await self._tidy()
            if self._fetch_failure:
                raise RevisionError(self._fetch_failure)

    async def _fetch_branches(self) -> str | None:
        """Fetches those followed branches upstream has (one not cut yet must not hold up the others, as git fetch
        of a missing ref fails whole); why it failed, or None."""
        wanted = [f"refs/heads/{branch}" for branch in self.branches]
        code, out, err = await self._git_upstream(["ls-remote", "--heads", self.upstream_url, *wanted])
        present = [ref for ref in (line.split()[-1] for line in out.splitlines()) if ref in wanted]
        if code == 0 and present:
            code, _, err = await self._git_upstream([*FETCH, "--prune", self.upstream_url,
                                                     *(f"+{ref}:{ref}" for ref in present), "--"])
        if code != 0:
            failure = f"could not fetch {', '.join(self.branches)} from upstream {self.upstream_url}: {err}"
            log.msg(f"crcr upstream mirror: {failure}")
            return failure
        return None

    @defer.inlineCallbacks
    def _git_upstream(self, args: list[str]):
        """(exit code, output, errors) of git asking upstream, in the mirror; stopped once silent for SILENT_AFTER s."""
        # The process reactor run_git uses too (a step's harness fakes the master's clock, not git's processes).
        from twisted.internet import reactor

        watch = SilenceWatch(reactor, SILENT_AFTER)
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # as run_git: never wait for credentials typed at a terminal
        reactor.spawnProcess(watch, sys.executable, [sys.executable, "-c", IN_OWN_SESSION, "git", *args], env=env,
                             path=self.path)
        code = yield watch.ended
        out = b"".join(watch.out).decode(errors="replace").strip()
        if watch.stopped:
            return code, out, f"git gave no sign of progress for {SILENT_AFTER} s and was stopped"
        err = b"".join(watch.err).decode(errors="replace")
        # Its progress as a terminal would have shown it: each line's last state.
        return code, out, "\n".join(line.rsplit("\r", 1)[-1] for line in err.split("\n")).strip()

    async def _tidy(self) -> None:
        """Under the lock, after a fetch: drop what the mirror no longer needs, then let git gc if it is time."""
        followed = {f"refs/heads/{branch}" for branch in self.branches}
        unneeded = [ref for ref in await self._refs("refs/heads") if ref not in followed]
        pull_request_refs = await self._refs(PULL_REQUEST_REFS, PULL_REQUEST_BASE_REFS)
        newest = set(sorted({_number(ref) for ref in pull_request_refs}, reverse=True)[:PULL_REQUESTS_KEPT])
        unneeded += [ref for ref in pull_request_refs if _number(ref) not in newest]
        for ref in unneeded:
            await run_git(["update-ref", "-d", ref], self.path)
        # Not detached: a gc running on in the background would escape the lock.
        code, _, err = await run_git(["-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"], self.path)
        if code != 0:
            log.msg(f"crcr upstream mirror: git gc --auto in {self.path} failed: {err}")

    async def _refs(self, *prefixes: str) -> list[str]:
        _, out, _ = await run_git(["for-each-ref", "--format=%(refname)", *prefixes], self.path)
        return out.split()


def _number(ref: str) -> int:
    """The pull request's number, last in its ref's name."""
    return int(ref.rsplit("/", 1)[1])


class SilenceWatch(protocol.ProcessProtocol):
    """Gathers a process's output; kills its process group once it has written nothing for `silent_after` s."""

    def __init__(self, reactor, silent_after: float):
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self.stopped = False
        self.ended = defer.Deferred()  # its exit code (None when killed)
        self._silent_after = silent_after
        self._deadline = reactor.callLater(silent_after, self._stop)
        self._group = None  # its process group: its pid, which Twisted forgets once it has ended

    def connectionMade(self) -> None:
        self._group = self.transport.pid

    def outReceived(self, data: bytes) -> None:
        self.out.append(data)
        self._deadline.reset(self._silent_after)

    def errReceived(self, data: bytes) -> None:
        self.err.append(data)
        self._deadline.reset(self._silent_after)

    def _stop(self) -> None:
        self.stopped = True
        try:  # it may have ended already, and what it started still holds its output
            os.killpg(self._group, signal.SIGKILL)
        except ProcessLookupError:  # not in a session of its own yet: nothing started by it either
            with contextlib.suppress(error.ProcessExitedAlready):
                self.transport.signalProcess("KILL")

    def processEnded(self, reason) -> None:
        if self._deadline.active():
            self._deadline.cancel()
        self.ended.callback(reason.value.exitCode)
