"""The OIDC token a callback to PyTorch's relay carries. That relay trusts the issuers compiled into it (GitHub
Actions, Buildkite), none of which a Buildbot master is, so the token comes from a command the operator configures
(CRCR_PYTORCH_RELAY_TOKEN_COMMAND; docs/pytorch-relay.md, 'Tokens'): run for each post, with the downstream repository
the token must name and the audience the relay checks in its environment, it prints the token. Tokens live minutes:
none is kept, written or logged.
"""

from __future__ import annotations

import os
import shlex
import shutil

from twisted.internet import defer, utils

AUDIENCE = "pytorch-cross-repo-ci-relay"
REPO_VARIABLE, AUDIENCE_VARIABLE = "CRCR_DOWNSTREAM_REPO", "CRCR_OIDC_AUDIENCE"
MAX_TOLD = 300  # characters of the command's error output a problem quotes


class NoToken(Exception):
    """The token command gave no token: why, in words for the outbox's problem column."""


@defer.inlineCallbacks
def oidc_token(reactor, command: str, repo: str):
    """The token the command prints for `repo`; NoToken saying why when it prints none."""
    argv = shlex.split(command)
    executable = shutil.which(argv[0]) if argv else None
    if executable is None:
        raise NoToken(f"token command {command!r}: {argv[0] if argv else 'nothing'} is not an executable found on PATH")
    env = {**os.environ, REPO_VARIABLE: repo, AUDIENCE_VARIABLE: AUDIENCE}
    out, err, code = yield utils.getProcessOutputAndValue(executable, argv[1:], env=env, reactor=reactor)
    token = out.decode(errors="replace").strip()
    if code != 0 or not token or any(c.isspace() for c in token):
        said = err.decode(errors="replace").strip()[-MAX_TOLD:] or "nothing on stderr"
        what = f"exited {code}" if code != 0 else "printed no single token"
        raise NoToken(f"token command for {repo} {what}: {said}")
    return token
