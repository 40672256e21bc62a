"""A small client of the running relay's REST and JSON-RPC API (Buildbot's /api/v2), for the crcr command:
anonymous, or signed in at the relay's auth/login with the session cookie it gives kept for the next calls."""

from __future__ import annotations

import argparse
import base64
import getpass
import http.cookiejar
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from crcr.config.errors import ConfigError
from crcr.config.users import check_name

USER_VARIABLE, PASSWORD_VARIABLE, TOKEN_VARIABLE = "CRCR_USER", "CRCR_PASSWORD", "CRCR_GITHUB_TOKEN"
HOW_TO_SIGN_IN = (
    f"sign in with --user NAME (or {USER_VARIABLE}) and the password in {PASSWORD_VARIABLE} (asked at a terminal), "
    f"or, on a relay that signs in with GitHub, with a GitHub token in {TOKEN_VARIABLE}"
)


@dataclass(frozen=True)
class Credentials:
    """Who a command signs in as: a user of the relay's users file, or whoever GitHub says a token is."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)  # never in a traceback
    github_token: str | None = field(default=None, repr=False)

    @property
    def who(self) -> str:
        return self.user or f"the GitHub token in {TOKEN_VARIABLE}"


ANONYMOUS = Credentials()


def add_sign_in_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user", metavar="NAME",
        help=f"sign in as NAME, a user of the relay's users file (default: {USER_VARIABLE}); the password comes from "
             f"{PASSWORD_VARIABLE} or is asked at a terminal. A relay that signs in with GitHub takes a GitHub token "
             f"from {TOKEN_VARIABLE} instead. Without either, the command is anonymous",
    )


def credentials_from(args: argparse.Namespace) -> Credentials:
    """The command's credentials from --user and the environment; never from an argument that holds a secret,
    since other users of the machine see a command's arguments."""
    user = args.user or os.environ.get(USER_VARIABLE) or None
    token = os.environ.get(TOKEN_VARIABLE, "").strip() or None
    if user and token:
        raise ConfigError(f"give --user (or {USER_VARIABLE}) for a relay with a users file, or {TOKEN_VARIABLE} for "
                          "a relay that signs in with GitHub, not both")
    if token:
        return Credentials(github_token=token)
    if not user:
        return ANONYMOUS
    check_name(user)
    password = os.environ.get(PASSWORD_VARIABLE)
    if password is None:
        if not sys.stdin.isatty():
            raise ConfigError(f"no password to sign in as {user}: set {PASSWORD_VARIABLE}, or run the command at a "
                              "terminal to be asked")
        password = getpass.getpass(f"password of {user} at the relay: ")
    return Credentials(user=user, password=password)


def call(url: str, body: dict | None = None) -> dict:
    """GET (or POST a JSON body to) the relay's REST API anonymously; JSON error replies are returned, not raised.

    Raises urllib.error.URLError when the relay cannot be reached."""
    return _call(urllib.request.build_opener(), url, body)[1]


class RelaySession:
    """Calls to the relay at `url` as `credentials`: the first call signs in, and the session cookie the relay
    gives then is sent with every later call."""

    def __init__(self, url: str, credentials: Credentials):
        self.url, self.credentials = url.rstrip("/"), credentials
        # Not following redirects: auth/login answers with one to the UI's page, which a command has no use for.
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirect())
        self._needs_sign_in = credentials != ANONYMOUS

    def call(self, path: str, body: dict | None = None) -> dict:
        """The JSON answer of `path` under the relay's /api/v2; RuntimeError saying what to do when the relay
        refuses the caller (an anonymous one: how to sign in)."""
        return self.answer(f"api/v2/{path}", body)[1]

    def answer(self, path: str, body: dict | None = None) -> tuple[int, dict]:
        """The HTTP status and JSON answer of `path` under the relay's URL (the crcr plugin's JSON is outside
        /api/v2); RuntimeError as call's when the relay refuses the caller."""
        if self._needs_sign_in:
            self._sign_in()
        status, reply = _call(self._opener, f"{self.url}/{path}", body)
        if status in (401, 403):
            if self.credentials == ANONYMOUS:
                raise RuntimeError(f"the relay at {self.url} refused an anonymous request ({error_message(reply)}): "
                                   f"{HOW_TO_SIGN_IN}")
            raise RuntimeError(f"the relay at {self.url} refused {self.credentials.who}: {error_message(reply)}")
        return status, reply

    def _sign_in(self) -> None:
        auth = _call(self._opener, f"{self.url}/config")[1].get("auth", {})
        by_github = bool(auth.get("oauth2"))
        if self.credentials.github_token and not by_github:
            raise RuntimeError(f"the relay at {self.url} does not sign in with GitHub: unset {TOKEN_VARIABLE} and "
                               f"sign in with --user NAME (or {USER_VARIABLE}) and {PASSWORD_VARIABLE}")
        if self.credentials.user and by_github:
            raise RuntimeError(f"the relay at {self.url} signs in with GitHub: set {TOKEN_VARIABLE} to a GitHub "
                               "token of yours instead of giving --user")
        if self.credentials.github_token:
            header = f"token {self.credentials.github_token}"
        else:
            pair = f"{self.credentials.user}:{self.credentials.password}".encode()
            header = "Basic " + base64.b64encode(pair).decode("ascii")
        status, reply = _call(self._opener, f"{self.url}/auth/login", headers={"Authorization": header})
        if status == 401 and self.credentials.user:
            raise RuntimeError(f"the relay at {self.url} refused the sign-in of {self.credentials.user}: "
                               "wrong name or password")
        if status >= 400:
            raise RuntimeError(f"the relay at {self.url} refused the sign-in of {self.credentials.who}: "
                               f"{error_message(reply)}")
        self._needs_sign_in = False


def call_force_scheduler(
    url: str, scheduler_name: Callable[[str], str], backend: str, params: dict, credentials: Credentials = ANONYMOUS
) -> Any:
    """The result of `force` asked of the backend's scheduler named by `scheduler_name` (force_scheduler_name,
    bisect_scheduler_name) on the relay at `url`, with the form's fields `params`, as `credentials`.

    Raises RuntimeError with what the user must read: the relay cannot be reached, refuses the sign-in or the
    caller, has no such scheduler (naming the backends that have one), or refused the fields (Buildbot's
    {field: problem})."""
    relay = RelaySession(url, credentials)
    scheduler = scheduler_name(backend)
    try:
        listed = relay.call("forceschedulers")
        if "forceschedulers" not in listed:
            raise RuntimeError(f"the relay at {relay.url} did not list its force schedulers: {error_message(listed)}")
        names = [s["name"] for s in listed["forceschedulers"]]
        if scheduler not in names:
            # A kind's schedulers are all named <prefix><backend>; the other kinds' are not backends of this one.
            prefix = scheduler_name("")
            raise RuntimeError(not_on_relay("backend", backend, relay.url,
                                            [n.removeprefix(prefix) for n in names if n.startswith(prefix)]))
        body = {"jsonrpc": "2.0", "id": 1, "method": "force", "params": params}
        reply = relay.call(f"forceschedulers/{scheduler}", body)
    except OSError as e:  # URLError, and a connection reset or timed out once made
        raise RuntimeError(f"cannot reach the relay at {relay.url}: {getattr(e, 'reason', e)}") from None
    if "error" in reply:
        raise RuntimeError(error_message(reply))
    return reply["result"]


def not_on_relay(kind: str, name: str, url: str, known: Iterable[str]) -> str:
    """What to say of a `kind` the command was given by `name` that the relay at `url` does not have: the ones it
    has."""
    return f"no {kind} '{name}' on the relay at {url} (it has: {', '.join(sorted(known)) or 'none'})"


def _call(opener: urllib.request.OpenerDirector, url: str, body: dict | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """The HTTP status and JSON answer (or {"error": {"message": text}}) of a GET, or of a POST of `body`."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, _json_or_text(response.read())
    except urllib.error.HTTPError as e:
        return e.code, _json_or_text(e.read())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def error_message(reply: dict) -> str:
    """The text of the relay's error answer: {"error": text}, Buildbot's {"error": {"message": ...}}."""
    error = reply.get("error", reply)
    message = error.get("message", error) if isinstance(error, dict) else error
    # Buildbot reports a refused force form as {field: problem}.
    if isinstance(message, dict):
        return "; ".join(f"{field}: {problem}" for field, problem in message.items())
    return str(message)


def _json_or_text(raw: bytes) -> dict:
    try:
        return json.loads(raw)
    except ValueError:
        return {"error": {"message": raw.decode(errors="replace")}}
