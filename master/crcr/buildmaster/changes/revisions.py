"""Turn what a user typed as an upstream revision into an exact commit, or a clear refusal.

Buildbot's force form only checks a regex; a relay must also refuse revisions upstream does not
have, and must pin a branch name to the commit it pointed at, so the GitHub status lands on the
commit that was really built. Shas are looked up in a repository holding the followed branches (the master's
upstream mirror, upstream_mirror.py, which fetches and asks again when one raises NotFetched); branch names are
asked of upstream itself.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from twisted.internet import defer, utils

from crcr.config.errors import shown
from crcr.config.fields import BRANCH_NAME
from crcr.config.limits import MAX_BRANCH_NAME

SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


class RevisionError(ValueError):
    pass


class NotFetched(RevisionError):
    """The repository does not hold what was asked about (yet): a fetch of upstream may answer it."""


@dataclass(frozen=True)
class Resolved:
    sha: str
    branch: str


@defer.inlineCallbacks
def run_git(args: list[str], cwd: str | None):
    """(exit code, output, errors) of git in `cwd` (None: the master's own); bytes that are not UTF-8 (a commit
    subject) are replaced."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for credentials typed at a terminal
    out, err, code = yield utils.getProcessOutputAndValue("git", args, path=cwd, env=env)
    return code, out.decode(errors="replace").strip(), err.decode(errors="replace").strip()


def typed_revision(typed) -> str:
    """What a person typed as a revision, stripped: a full or abbreviated sha, or a branch name; anything else (a
    REST request's JSON can give any type) is refused with a message."""
    revision = typed.strip() if isinstance(typed, str) else ""
    if not (SHA.match(revision) or (len(revision) <= MAX_BRANCH_NAME and re.match(BRANCH_NAME, revision))):
        raise RevisionError(f"{shown(typed)} is neither a commit sha (7 to 40 hex digits) nor a branch name")
    return revision


@defer.inlineCallbacks
def resolve(revision: str, upstream_url: str, repository: str, branches: list[str], git_upstream):
    """Resolve `revision` (a typed_revision) to a Resolved commit: a sha in `repository`, a branch name by upstream
    (asked through `git_upstream(args)`, which runs git as run_git does, with its bound on a silent upstream)."""
    if SHA.match(revision):
        resolved = yield _resolve_sha(revision.lower(), repository, branches)
        return resolved
    code, out, err = yield git_upstream(["ls-remote", "--heads", upstream_url, f"refs/heads/{revision}"])
    if code != 0:
        raise RevisionError(f"could not ask upstream {upstream_url} for branch '{revision}': {err}")
    if not out:
        raise RevisionError(f"upstream {upstream_url} has no branch '{revision}'")
    return Resolved(sha=out.split()[0], branch=revision)


@defer.inlineCallbacks
def _resolve_sha(revision: str, repository: str, branches: list[str]):
    code, sha, err = yield run_git(["rev-parse", "--verify", f"{revision}^{{commit}}"], repository)
    if code != 0 and "ambiguous" in err:
        raise RevisionError(f"abbreviated sha '{revision}' matches several upstream commits; give more digits")
    if code != 0:
        raise NotFetched(
            f"commit '{revision}' is not on any followed upstream branch ({', '.join(branches)}) "
            "known to the relay; give a branch name to build another branch's head"
        )
    for branch in branches:
        code, _, _ = yield run_git(["merge-base", "--is-ancestor", sha, f"refs/heads/{branch}"], repository)
        if code == 0:
            return Resolved(sha=sha, branch=branch)
    # A pull request's commit, say, which a branch may have merged since the last fetch.
    raise NotFetched(f"commit '{revision}' is not on any followed upstream branch ({', '.join(branches)})")


@dataclass(frozen=True)
class Commit:
    """A commit as the upstream poller describes it in a Change."""

    author: str  # 'Name <email>'
    committer: str
    when: int  # the commit's time, epoch seconds
    message: str
    parents: int = 1  # a merge has several


# Commit's fields apart by NULs, which no commit holds; the message last.
COMMIT_FORMAT = "%an <%ae>%x00%cn <%ce>%x00%ct%x00%P%x00%B"


@defer.inlineCallbacks
def describe_commit(sha: str, repository: str):
    """The Commit `sha` of `repository`; NotFetched when the repository lacks it."""
    code, out, err = yield run_git(["show", "--no-patch", f"--format={COMMIT_FORMAT}", f"{sha}^{{commit}}", "--"],
                                   repository)
    if code != 0:
        raise NotFetched(f"no commit '{sha}': {err}")
    author, committer, when, parents, message = out.split("\0", 4)
    return Commit(author=author, committer=committer, when=int(when), message=message.strip(),
                  parents=len(parents.split()))


@defer.inlineCallbacks
def changed_files(shas: list[str], repository: str):
    """{sha: the files it changed against its first parent} (a merge's: what it brought to its branch); NotFetched
    when the repository lacks one of them."""
    if not shas:
        return {}
    code, out, err = yield run_git(["log", "--no-walk=unsorted", "-m", "--first-parent", "--name-only",
                                    "--format=%x00%H", *shas, "--"], repository)
    if code != 0:
        raise NotFetched(f"no commits {' '.join(sha[:10] for sha in shas[:3])}...: {err}")
    files: dict[str, list[str]] = {}
    for entry in out.split("\0")[1:]:
        sha, *names = entry.strip().splitlines()
        files[sha] = [name for name in names if name]
    return files


async def first_parent_ancestors(sha: str, count: int, repository: str) -> list[str]:
    """Up to `count` commits before `sha` along its first parents, nearest first; NotFetched when the repository
    lacks it."""
    code, out, err = await run_git(["rev-list", "--first-parent", f"--max-count={count + 1}", sha, "--"], repository)
    if code != 0:
        raise NotFetched(f"no commit '{sha}': {err}")
    return out.split()[1:]


async def changes_between(old: str, new: str, repository: str) -> list[tuple[str, str]]:
    """[(A, M or D, path)] of what changed from `old` to `new`; a rename is a D and an A, a type change an M."""
    code, out, err = await run_git(["diff", "--name-status", "--no-renames", "-z", old, new, "--"], repository)
    if code != 0:
        raise NotFetched(f"no diff from {old[:10]} to {new[:10]}: {err}")
    fields = out.split("\0")
    return [("M" if status == "T" else status[0], path) for status, path in zip(fields[0::2], fields[1::2])
            if status]


# A bisection of more commits than this is refused: the relay's baselines look no further back either.
MAX_BISECTED_COMMITS = 500


@defer.inlineCallbacks
def first_parent_range(good: str, bad: str, repository: str):
    """The commits of (good, bad] along bad's first parents, oldest first: what a bisection bisects."""
    code, out, err = yield run_git(["rev-list", "--first-parent", "--reverse", f"{good}..{bad}", "--"], repository)
    if code != 0:
        raise NotFetched(f"no history from {good[:10]} to {bad[:10]}: {err}")
    commits = out.split()
    if not commits:
        raise RevisionError(f"{bad[:10]} does not come after {good[:10]}")
    code, _, _ = yield run_git(["merge-base", "--is-ancestor", good, bad], repository)
    if code != 0:
        raise RevisionError(f"{good[:10]} is not an ancestor of {bad[:10]}")
    if len(commits) > MAX_BISECTED_COMMITS:
        raise RevisionError(f"{len(commits)} commits from {good[:10]} to {bad[:10]}; at most {MAX_BISECTED_COMMITS}")
    return commits
