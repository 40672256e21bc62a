"""Turn what a user typed as an upstream revision into an exact commit, or a clear refusal.

Buildbot's force form only checks a regex; a relay must also refuse revisions upstream does not
have, and must pin a branch name to the commit it pointed at, so the GitHub status lands on the
commit that was really built. The GitPoller's bare repository already holds every commit of the
followed branches, so shas are looked up there; branch names are asked of upstream itself.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from buildbot.changes.gitpoller import GitPoller
from twisted.internet import defer, utils

from crcr.config.errors import shown
from crcr.config.limits import MAX_BRANCH_NAME
from crcr.config.models import BRANCH_NAME
from crcr.names import pull_request_ref

SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


class RevisionError(ValueError):
    pass


@dataclass(frozen=True)
class Resolved:
    sha: str
    branch: str


@defer.inlineCallbacks
def run_git(args: list[str], cwd: str):
    """(exit code, output, errors) of git in `cwd`; bytes that are not UTF-8 (a commit subject) are replaced."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for credentials typed at a terminal
    out, err, code = yield utils.getProcessOutputAndValue("git", args, path=cwd, env=env)
    return code, out.decode(errors="replace").strip(), err.decode(errors="replace").strip()


@defer.inlineCallbacks
def resolve(revision: str, upstream_url: str, poller_dir: str, branches: list[str]):
    """Resolve `revision` (full or abbreviated sha, or branch name) to a Resolved commit; what a person typed, so
    anything (a REST request's JSON can give any type) is refused with a message."""
    typed = revision
    revision = typed.strip() if isinstance(typed, str) else ""
    if not (SHA.match(revision) or (len(revision) <= MAX_BRANCH_NAME and re.match(BRANCH_NAME, revision))):
        raise RevisionError(f"{shown(typed)} is neither a commit sha (7 to 40 hex digits) nor a branch name")
    if not os.path.isdir(poller_dir):
        raise RevisionError("the relay has not fetched upstream yet; try again after its first poll")
    if SHA.match(revision):
        resolved = yield _resolve_sha(revision.lower(), upstream_url, poller_dir, branches)
        return resolved
    code, out, err = yield run_git(["ls-remote", "--heads", upstream_url, f"refs/heads/{revision}"], poller_dir)
    if code != 0:
        raise RevisionError(f"could not ask upstream {upstream_url} for branch '{revision}': {err}")
    if not out:
        raise RevisionError(f"upstream {upstream_url} has no branch '{revision}'")
    return Resolved(sha=out.split()[0], branch=revision)


@defer.inlineCallbacks
def _resolve_sha(revision: str, upstream_url: str, poller_dir: str, branches: list[str]):
    code, sha, err = yield run_git(["rev-parse", "--verify", f"{revision}^{{commit}}"], poller_dir)
    if code != 0 and "ambiguous" in err:
        raise RevisionError(f"abbreviated sha '{revision}' matches several upstream commits; give more digits")
    if code != 0:
        raise RevisionError(
            f"commit '{revision}' is not on any followed upstream branch ({', '.join(branches)}) "
            "known to the relay; give a branch name to build another branch's head"
        )
    for branch in branches:
        # The poller keeps each followed branch under its own tracker ref.
        ref = GitPoller._tracker_ref(upstream_url, f"refs/heads/{branch}")
        code, _, _ = yield run_git(["merge-base", "--is-ancestor", sha, ref], poller_dir)
        if code == 0:
            return Resolved(sha=sha, branch=branch)
    raise RevisionError(f"commit '{revision}' is not on any followed upstream branch ({', '.join(branches)})")


# A bisection of more commits than this is refused: the relay's baselines look no further back either.
MAX_BISECTED_COMMITS = 500


@defer.inlineCallbacks
def first_parent_range(good: str, bad: str, poller_dir: str):
    """The commits of (good, bad] along bad's first parents, oldest first: what a bisection bisects."""
    code, out, err = yield run_git(["rev-list", "--first-parent", "--reverse", f"{good}..{bad}", "--"], poller_dir)
    if code != 0:
        raise RevisionError(f"no history from {good[:10]} to {bad[:10]}: {err}")
    commits = out.split()
    if not commits:
        raise RevisionError(f"{bad[:10]} does not come after {good[:10]}")
    code, _, _ = yield run_git(["merge-base", "--is-ancestor", good, bad], poller_dir)
    if code != 0:
        raise RevisionError(f"{good[:10]} is not an ancestor of {bad[:10]}")
    if len(commits) > MAX_BISECTED_COMMITS:
        raise RevisionError(f"{len(commits)} commits from {good[:10]} to {bad[:10]}; at most {MAX_BISECTED_COMMITS}")
    return commits


# Where the relay keeps each pull request's head (and base, when the poller had not seen it) in the poller's
# repository: a namespace of its own, so the GitPoller's concurrent fetches (refs/buildbot/...) neither race
# for these refs nor prune them.
PULL_REQUEST_REFS = "refs/crcr/pull"
PULL_REQUEST_BASE_REFS = "refs/crcr/pull-base"


@defer.inlineCallbacks
def fetch_pull_request(number: int, head_sha: str, base_sha: str, upstream_url: str, poller_dir: str):
    """Fetch pull request `number`'s head from upstream's refs/pull/<number>/head (no access to the fork needed),
    and its base commit, into the poller's repository; only what it lacks, so nothing when it has both."""
    for what, sha in (("head", head_sha), ("base", base_sha)):
        if not SHA.match(sha):
            raise RevisionError(f"pull request #{number}: its {what} '{sha}' is not a commit sha")
    if not os.path.isdir(poller_dir):
        raise RevisionError("the relay has not fetched upstream yet; try again after its first poll")
    # (what it is, its commit, the refspec fetching it)
    wanted = [(f"its head {head_sha[:10]} ({pull_request_ref(number)})", head_sha,
               f"+{pull_request_ref(number)}:{PULL_REQUEST_REFS}/{number}"),
              (f"its base {base_sha[:10]}", base_sha, f"+{base_sha}:{PULL_REQUEST_BASE_REFS}/{number}")]
    missing = yield _lacking(wanted, poller_dir)
    if not missing:
        return
    # Neither FETCH_HEAD nor an automatic gc: the GitPoller may be fetching into the same repository meanwhile.
    code, _, err = yield run_git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                                  upstream_url, *(refspec for _, _, refspec in missing), "--"], poller_dir)
    still = yield _lacking(missing, poller_dir)
    if still:
        why = f": {err}" if code != 0 else ""
        raise RevisionError(f"pull request #{number}: could not fetch {' and '.join(what for what, _, _ in still)} "
                            f"from {upstream_url}{why}")


@defer.inlineCallbacks
def _lacking(wanted: list[tuple[str, str, str]], poller_dir: str):
    """Those of `wanted` whose commit the poller's repository does not have."""
    lacking = []
    for entry in wanted:
        code, _, _ = yield run_git(["cat-file", "-e", f"{entry[1]}^{{commit}}"], poller_dir)
        if code != 0:
            lacking.append(entry)
    return lacking


@defer.inlineCallbacks
def pull_request_merge_base(number: int, head_sha: str, base_sha: str, upstream_url: str, poller_dir: str):
    """The commit where pull request `number`'s head left its base branch (git merge-base), its commits fetched
    first when the poller lacks them."""
    yield fetch_pull_request(number, head_sha, base_sha, upstream_url, poller_dir)
    code, out, err = yield run_git(["merge-base", head_sha, base_sha], poller_dir)
    if code != 0:
        raise RevisionError(f"pull request #{number}: its head {head_sha[:10]} and base {base_sha[:10]} "
                            f"have no merge base{': ' + err if err else ''}")
    return out
