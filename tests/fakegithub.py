"""A stand-in for the GitHub REST API (the one service tests cannot reach): records every request.

It answers POST /repos/{owner}/{repo}/statuses/{sha} like GitHub does (201 with the status; 422 for a description
over GitHub's 140 characters, too_long) and can be told to fail or leave unanswered the next N requests, so tests
can check what the relay does then.

Told of a GitHub App (install_app), it also plays the App's side: GET /repos/{o}/{r}/installation and
POST /app/installations/{id}/access_tokens answer only a JWT signed with the App's key and issued by its id (401
otherwise), and POST /repos/{o}/{r}/check-runs and PATCH /repos/{o}/{r}/check-runs/{id} only a token it issued.

Issues, as the relay opens one per break on a backend's repository: POST /repos/{o}/{r}/issues creates one (its
number the repository's next), GET /repos/{o}/{r}/issues lists them newest first (filters: state open, closed or
all, open by default; labels, each required; per_page), POST /repos/{o}/{r}/issues/{n}/comments comments, PATCH
/repos/{o}/{r}/issues/{n} changes its state; each to any token (issues() shows them). lose_next makes GitHub do
what it was asked and the answer be lost (502). GET /repos/{o}/{r} answers the repository with the token's
permissions (push).

Told of a pull request (open_pull_request), it answers GET /repos/{o}/{r}/pulls/{n} with it, to any token.

Told of an OAuth app (register_oauth_app), it plays GitHub's sign-in as Buildbot's GitHubAuth uses it with an
Enterprise server: /login/oauth/authorize sends the browser back to the app's callback with a code, as the person
signed in at GitHub (sign_in_at_github); POST /login/oauth/access_token trades the code and the app's credentials for
a token; GET /api/v3/user (and /user) answers who a token it issued (or user_token's) is.

It speaks HTTP/1.0 and closes each connection after its answer without saying so, as a server closing a
keep-alive connection does: the relay's HTTP client then sometimes sends its next post on a connection
already closed, never answered, and must post it again (Twisted never re-sends a POST by itself).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from loopback import serve_in_thread

STATUS_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>[0-9a-f]{40})$")
INSTALLATION_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/installation$")
TOKEN_PATH = re.compile(r"^/app/installations/(?P<installation>\d+)/access_tokens$")
CHECK_RUNS_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/check-runs$")
CHECK_RUN_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/check-runs/(?P<id>\d+)$")
USER_PATH = re.compile(r"^(/api/v3)?/user$")
PULL_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<number>\d+)$")
ISSUES_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/issues(?:\?(?P<query>.*))?$")
ISSUE_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<number>\d+)$")
COMMENTS_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<number>\d+)/comments$")
REPO_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)$")
LOST = -1  # faults: the request is served, its answer replaced by a 502
APP_PERMISSIONS = {"checks": "write", "issues": "write", "metadata": "read", "statuses": "write"}
PERMISSION_PATH = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/collaborators/(?P<login>[^/]+)/permission$")
TOKEN_LIFETIME = 3600  # seconds, as GitHub's installation tokens
NO_ANSWER = 0  # Recorded.answered of a request left unanswered
OUTAGE = 10**9  # faults: for as long as the outage lasts


@dataclass(frozen=True)
class RawAnswer:
    """An answer that is not JSON: an OAuth redirect, or the form-encoded token GitHub gives an OAuth app."""

    content_type: str = "text/plain"
    data: bytes = b""
    location: str | None = None


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict
    body: dict | None
    answered: int  # the HTTP status the fake replied with, or NO_ANSWER


def rsa_key_pair() -> tuple[str, object]:
    """A fresh GitHub App key (PEM, as GitHub hands it out) and its public half, for install_app: no key file in
    the repository."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption()).decode()
    return pem, key.public_key()


class _Server(ThreadingHTTPServer):
    # Python's default listen backlog of 5 turned bursts of posts away for minutes: GitHub does not.
    request_queue_size = 1024


class FakeGitHub:
    def __init__(self, listen: bool = True):
        """`listen`: on a loopback port (start()); without, its requests come through handle() alone."""
        self.requests: list[Recorded] = []
        self._faults_left = 0
        self._faulty_sha: str | None = None  # or any part of the path of the requests to fail
        self._faulty_method: str | None = None
        self._fault = 500
        self._fault_headers: dict[str, str] = {}  # sent with each fault's answer (go_down)
        self._refusing = False  # go_down(None): nothing listens
        self._app: tuple[str, object, int] | None = None  # (App id, its public key, installation id)
        self._app_permissions: dict[str, str] = {}
        self._issues: dict[str, list[dict]] = {}  # repository -> its issues, oldest first, each with its "comments"
        self._tokens: set[str] = set()  # installation tokens issued
        self._check_runs: list[dict] = []  # each as created, then as updated; its "updates" lists each payload
        self._permissions: dict[str, str] = {}  # login -> GitHub's coarse permission on every repository
        self._pulls: dict[tuple[str, int], dict] = {}  # (repository, number) -> the pull request
        self._oauth_app: tuple[str, str, str] | None = None  # (client id, client secret, callback URL)
        self._browser_login: str | None = None  # who is signed in at GitHub in the browser
        self._oauth_codes: dict[str, tuple[str, str]] = {}  # code -> (login, redirect_uri), each used once
        self._user_tokens: dict[str, str] = {}  # token -> login
        self._lock = threading.Lock()
        self._stopped = threading.Event()  # ends the wait of requests left unanswered
        self._server = _Server(("127.0.0.1", 0), self._handler()) if listen else None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> FakeGitHub:
        serve_in_thread(self._server)
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, count: int, sha: str | None = None) -> None:
        """Answer 500 to the next `count` requests (only those about commit `sha`, if given)."""
        self._next_faults(500, count, sha)

    def lose_next(self, count: int, path_part: str | None = None, method: str | None = None) -> None:
        """Do what the next `count` requests (with `path_part` in their path, of `method`, if given) ask, and answer
        502: the answer lost on its way back, after GitHub took the request."""
        self._next_faults(LOST, count, path_part, method)

    def stall_next(self, count: int, sha: str | None = None) -> None:
        """Leave the next `count` requests (about `sha`, if given) unanswered while the stand-in runs, as a stalled
        GitHub connection does: the request was read, nothing comes back, the connection stays open."""
        self._next_faults(NO_ANSWER, count, sha)

    def _next_faults(self, fault: int, count: int, sha: str | None, method: str | None = None) -> None:
        with self._lock:
            self._fault, self._faults_left, self._faulty_sha, self._faulty_method = fault, count, sha, method

    def go_down(self, answer: int | None = 502, retry_after: int | None = None,
                rate_limit_reset: float | None = None) -> None:
        """GitHub down until come_back(): every request answered `answer` (403 and 429 saying a rate limit is
        exceeded), with Retry-After `retry_after` seconds or X-RateLimit-Remaining 0 and X-RateLimit-Reset
        `rate_limit_reset` (Unix time) if given; with `answer` None, every connection refused (nothing listens)."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        if rate_limit_reset is not None:
            headers.update({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(rate_limit_reset))})
        with self._lock:
            self._fault, self._faults_left, self._faulty_sha, self._faulty_method = answer, OUTAGE, None, None
            self._fault_headers = headers
        if answer is None and not self._refusing:
            self._refusing = True
            self._server.shutdown()
            self._server.server_close()

    def come_back(self) -> None:
        """The end of go_down's outage: requests are served again, on the same port."""
        with self._lock:
            self._faults_left, self._fault, self._fault_headers = 0, 500, {}
        if self._refusing:
            self._refusing = False
            self._server = _Server(("127.0.0.1", self._server.server_port), self._handler())
            serve_in_thread(self._server)

    def grant(self, login: str, permission: str) -> None:
        """Give `login` a permission ('admin', 'write', 'read') on every repository; others are no collaborators."""
        with self._lock:
            self._permissions[login] = permission

    def open_pull_request(self, repo: str, pull_request: dict) -> None:
        """Answer GET /repos/`repo`/pulls/<its number> with `pull_request` (as GitHub's webhooks have it)."""
        with self._lock:
            self._pulls[(repo, pull_request["number"])] = pull_request

    def install_app(self, app_id: str, public_key, installation_id: int = 1,
                    permissions: dict[str, str] | None = None) -> None:
        """Play a GitHub App with this id and public key, installed on every repository with `permissions`
        (APP_PERMISSIONS unless given)."""
        with self._lock:
            self._app = (str(app_id), public_key, installation_id)
            self._app_permissions = dict(APP_PERMISSIONS if permissions is None else permissions)

    def issues(self, repo: str) -> list[dict]:
        """The issues of `repo` as they stand, oldest first: number, title, body, labels (names), state and
        comments (their bodies)."""
        with self._lock:
            return [{**issue, "comments": list(issue["comments"])} for issue in self._issues.get(repo, [])]

    def register_oauth_app(self, client_id: str, client_secret: str, callback_url: str) -> None:
        """Play an OAuth app with these credentials, whose callback URL is `callback_url`."""
        with self._lock:
            self._oauth_app = (client_id, client_secret, callback_url)

    def sign_in_at_github(self, login: str) -> None:
        """The browser's GitHub session: /login/oauth/authorize grants the app's request as `login`."""
        with self._lock:
            self._browser_login = login

    def user_token(self, login: str) -> str:
        """A new personal access token of `login`, as a person makes one in GitHub's settings."""
        with self._lock:
            return self._issue_user_token("ghp", login)

    def _issue_user_token(self, prefix: str, login: str) -> str:
        token = f"{prefix}_fake{len(self._user_tokens) + 1}{login}"
        self._user_tokens[token] = login
        return token

    def check_runs(self, sha: str | None = None, name: str | None = None) -> list[dict]:
        """Each check run (of commit `sha`, named `name`, if given) as it stands now, in the order they were
        created, with its repository, its "updates" (every payload posted for it, in order) and the
        Authorization header of its last update."""
        with self._lock:
            runs = [{**run, "updates": list(run["updates"])} for run in self._check_runs]
        return [r for r in runs if (sha is None or r["head_sha"] == sha) and (name is None or r["name"] == name)]

    def statuses(self, sha: str | None = None, context: str | None = None) -> list[dict]:
        """The status payloads posted, in order, with the repository and sha they were posted to."""
        with self._lock:
            recorded = list(self.requests)
        found = []
        for r in recorded:
            m = STATUS_PATH.match(r.path)
            if r.method != "POST" or not m or r.body is None:
                continue
            status = {
                **r.body,
                "repo": m["repo"],
                "sha": m["sha"],
                "authorization": r.headers.get("Authorization"),
                "answered": r.answered,
            }
            if (sha is None or m["sha"] == sha) and (context is None or status.get("context") == context):
                found.append(status)
        return found

    def _serve(self, method: str, path: str, headers, body: dict | None) -> tuple[int, dict | RawAnswer]:
        """GitHub's answer to a request, under the lock: its HTTP status and JSON."""
        if path.startswith("/login/oauth/") or USER_PATH.match(path):
            return self._serve_oauth(method, path, headers, body)
        if method in ("POST", "PATCH") and body and (refusal := too_long(body)):  # a status's, a check run's
            return 422, refusal
        if method == "POST" and STATUS_PATH.match(path):
            return 201, {"id": len(self.requests) + 1, **(body or {})}
        if method == "GET" and (m := PERMISSION_PATH.match(path)):
            if not headers.get("Authorization"):
                return _UNAUTHORIZED
            if m["login"] not in self._permissions:
                return 404, {"message": f"{m['login']} is not a user"}
            return 200, {"permission": self._permissions[m["login"]], "user": {"login": m["login"]}}
        if method == "GET" and (m := PULL_PATH.match(path)):
            if not headers.get("Authorization"):
                return _UNAUTHORIZED
            pull_request = self._pulls.get((m["repo"], int(m["number"])))
            return (200, pull_request) if pull_request else (404, {"message": "Not Found"})
        if method == "GET" and INSTALLATION_PATH.match(path) and self._app:
            if not self._signed_by_app(headers):
                return _UNAUTHORIZED
            return 200, {"id": self._app[2], "permissions": dict(self._app_permissions)}
        if ISSUES_PATH.match(path) or ISSUE_PATH.match(path) or COMMENTS_PATH.match(path):
            return self._serve_issues(method, path, headers, body)
        if method == "GET" and (m := REPO_PATH.match(path)):
            if not headers.get("Authorization"):
                return _UNAUTHORIZED
            return 200, {"full_name": m["repo"], "permissions": {"admin": False, "push": True, "pull": True}}
        if method == "POST" and (m := TOKEN_PATH.match(path)) and self._app and int(m["installation"]) == self._app[2]:
            if not self._signed_by_app(headers):
                return _UNAUTHORIZED
            token = f"ghs_fake{len(self._tokens) + 1}"
            self._tokens.add(token)
            expires = datetime.fromtimestamp(time.time() + TOKEN_LIFETIME, UTC)
            return 201, {"token": token, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}
        if method == "POST" and (m := CHECK_RUNS_PATH.match(path)) and body:
            if not self._issued_token(headers):
                return _UNAUTHORIZED
            run = {"id": len(self._check_runs) + 1, "repo": m["repo"], **body, "updates": [body],
                   "authorization": headers.get("Authorization")}
            self._check_runs.append(run)
            return 201, {k: v for k, v in run.items() if k not in ("updates", "authorization")}
        if method == "PATCH" and (m := CHECK_RUN_PATH.match(path)) and body:
            if not self._issued_token(headers):
                return _UNAUTHORIZED
            run = next((r for r in self._check_runs if r["id"] == int(m["id"]) and r["repo"] == m["repo"]), None)
            if run is None:
                return 404, {"message": "Not Found"}
            run.update(body, authorization=headers.get("Authorization"))
            run["updates"].append(body)
            return 200, {k: v for k, v in run.items() if k not in ("updates", "authorization")}
        return 404, {"message": "Not Found"}

    def _serve_issues(self, method: str, path: str, headers, body: dict | None) -> tuple[int, dict | list]:
        if not headers.get("Authorization"):
            return _UNAUTHORIZED
        if (m := ISSUES_PATH.match(path)) and method == "POST" and body:
            issues = self._issues.setdefault(m["repo"], [])
            issue = {"number": len(issues) + 1, "title": body["title"], "body": body.get("body") or "",
                     "labels": list(body.get("labels") or []), "state": "open", "comments": []}
            issues.append(issue)
            return 201, _shown(issue)
        if (m := ISSUES_PATH.match(path)) and method == "GET":
            asked = dict(parse_qsl(m["query"] or ""))
            state, labels = asked.get("state", "open"), [name for name in asked.get("labels", "").split(",") if name]
            found = [_shown(issue) for issue in reversed(self._issues.get(m["repo"], []))
                     if state in ("all", issue["state"]) and all(name in issue["labels"] for name in labels)]
            return 200, found[: int(asked.get("per_page", 30))]
        m = COMMENTS_PATH.match(path) or ISSUE_PATH.match(path)
        issue = next((i for i in self._issues.get(m["repo"], []) if i["number"] == int(m["number"])), None)
        if issue is None:
            return 404, {"message": "Not Found"}
        if COMMENTS_PATH.match(path) and method == "POST" and body:
            issue["comments"].append(body["body"])
            return 201, {"id": len(issue["comments"]), "body": body["body"]}
        if ISSUE_PATH.match(path) and method == "PATCH" and body:
            issue.update({key: body[key] for key in ("state", "title", "body") if key in body})
            return 200, _shown(issue)
        return 404, {"message": "Not Found"}

    def _serve_oauth(self, method: str, path: str, headers, body: dict | None) -> tuple[int, dict | RawAnswer]:
        """GitHub's web sign-in flow for OAuth apps, and GET /user."""
        url = urlsplit(path)
        if method == "GET" and url.path == "/login/oauth/authorize" and self._oauth_app:
            asked = dict(parse_qsl(url.query))
            client_id, _, callback = self._oauth_app
            redirect_uri = asked.get("redirect_uri", callback)
            if asked.get("client_id") != client_id or not redirect_uri.startswith(callback):
                return 400, {"message": "The redirect_uri is not associated with this application."}
            if self._browser_login is None:
                return 400, {"message": "nobody is signed in at GitHub: call sign_in_at_github first"}
            code = f"code{len(self._oauth_codes) + 1}"
            self._oauth_codes[code] = (self._browser_login, redirect_uri)
            back = {"code": code, **({"state": asked["state"]} if "state" in asked else {})}
            return 302, RawAnswer(location=f"{redirect_uri}?{urlencode(back)}")
        if method == "POST" and url.path == "/login/oauth/access_token" and self._oauth_app:
            asked = body or {}
            client_id, client_secret, _ = self._oauth_app
            if (asked.get("client_id"), asked.get("client_secret")) != (client_id, client_secret):
                answer = {"error": "incorrect_client_credentials",
                          "error_description": "The client_id and/or client_secret passed are incorrect."}
            elif (granted := self._oauth_codes.pop(asked.get("code"), None)) is None:
                answer = {"error": "bad_verification_code",
                          "error_description": "The code passed is incorrect or expired."}
            elif asked.get("redirect_uri", granted[1]) != granted[1]:
                answer = {"error": "redirect_uri_mismatch", "error_description": "The redirect_uri MUST match."}
            else:
                token = self._issue_user_token("gho", granted[0])
                answer = {"access_token": token, "scope": "", "token_type": "bearer"}
            # Without `Accept: application/json`, GitHub answers form-encoded, errors included, with 200.
            return 200, RawAnswer("application/x-www-form-urlencoded", urlencode(answer).encode())
        if method == "GET" and USER_PATH.match(url.path):
            scheme, _, token = (headers.get("Authorization") or "").partition(" ")
            login = self._user_tokens.get(token) if scheme.lower() in ("token", "bearer") else None
            if login is None:
                return _UNAUTHORIZED
            return 200, {"login": login, "name": f"{login.title()} Person"}
        return 404, {"message": "Not Found"}

    def handle(self, method: str, path: str, headers, body: dict | None
               ) -> tuple[int, dict | list | RawAnswer, dict[str, str]]:
        """A request (its path with its query) answered and recorded: its HTTP status, JSON and headers. Its HTTP
        server calls it, and so can a test's in-memory stand-in (tests/test_issue_sender.py)."""
        with self._lock:
            faulty = self._faults_left > 0 and (self._faulty_sha or "") in path \
                and self._faulty_method in (None, method)
            self._faults_left -= faulty
            code, answer = self._answer(method, path, headers, body, faulty)
            self.requests.append(Recorded(method, path, dict(headers), body, code))
            return code, answer, dict(self._fault_headers) if faulty else {}

    def _answer(self, method: str, path: str, headers, body: dict | None, faulty: bool
                ) -> tuple[int, dict | list | RawAnswer]:
        if not faulty:
            return self._serve(method, path, headers, body)
        if self._fault == LOST:
            self._serve(method, path, headers, body)
            return 502, _fault_message(502)
        return self._fault, _fault_message(self._fault)

    def _signed_by_app(self, headers) -> bool:
        """A JWT signed with the App's key, issued by its id, not expired, as GitHub checks it."""
        app_id, public_key, _ = self._app
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        try:
            jwt.decode(token, public_key, algorithms=["RS256"], issuer=app_id, options={"require": ["iat", "exp"]})
        except jwt.PyJWTError:
            return False
        return scheme == "Bearer"

    def _issued_token(self, headers) -> bool:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        return scheme in ("Bearer", "token") and token in self._tokens

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._answer("GET")

            def do_POST(self):
                self._answer("POST")

            def do_PATCH(self):
                self._answer("PATCH")

            def _answer(self, method: str):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:  # a form, as OAuth apps post to /login/oauth/access_token
                    body = dict(parse_qsl(raw.decode(errors="replace")))
                code, answer, headers = fake.handle(method, self.path, self.headers, body)
                if code == NO_ANSWER:
                    fake._stopped.wait()
                    return
                if code == 500:
                    return self._reply(500, {"message": "Server Error (told to fail by the test)"})
                return self._reply(code, answer, headers)

            def _reply(self, code: int, payload: dict | RawAnswer, headers: dict | None = None) -> None:
                raw = payload if isinstance(payload, RawAnswer) else RawAnswer(
                    "application/json", json.dumps(payload).encode())
                data = raw.data
                self.send_response(code)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", raw.content_type)
                if raw.location:
                    self.send_header("Location", raw.location)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


_UNAUTHORIZED = (401, {"message": "Bad credentials"})
DESCRIPTION_LIMIT = 140  # characters of a commit status's description
OUTPUT_TEXT_LIMIT = 65535  # a check run's output.summary and output.text, in UTF-8 bytes as GitHub counts them


def too_long(body: dict) -> dict | None:
    """GitHub's 422 answer to a status or check run whose text is over its limit, refusing the whole post; None when
    every text is within."""
    if len(body.get("description") or "") > DESCRIPTION_LIMIT:
        return {"message": "Validation Failed", "errors": [{
            "resource": "Status", "code": "custom", "field": "description",
            "message": f"description is too long (maximum is {DESCRIPTION_LIMIT} characters)"}]}
    output = body.get("output") or {}
    supplied = max(len((output.get(name) or "").encode()) for name in ("summary", "text"))
    if supplied > OUTPUT_TEXT_LIMIT:
        return {"message": f"Invalid request.\n\nOnly {OUTPUT_TEXT_LIMIT} characters are allowed; {supplied} were "
                           "supplied."}
    return None


def _shown(issue: dict) -> dict:
    """An issue as GitHub's API shows it: its labels as objects, its comments counted."""
    return {**issue, "labels": [{"name": name} for name in issue["labels"]], "comments": len(issue["comments"])}


def _fault_message(code: int) -> dict:
    if code in (403, 429):
        return {"message": "API rate limit exceeded (told by the test)"}
    return {"message": "Server Error (told to fail by the test)"}
