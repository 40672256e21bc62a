"""A stand-in for PyTorch's own relay's callback endpoint (POST /github/callback), the one service besides GitHub the
tests cannot reach: it checks each callback as that relay's handler does and records what it would forward to HUD.

Its rules are those of pytorch/test-infra at 61a77570f45416dc425c17d4a648376541a84732, aws/lambda/cross_repo_ci_relay/:
callback/lambda_function.py (route 404/405, JSON 400, the order below), utils/jwt_helper.py (the Bearer token: issuer
one of the two compiled in, else 401 "Unsupported OIDC issuer"; RS256, audience pytorch-cross-repo-ci-relay, expiry,
else 401 "Invalid authorization token"; a GitHub token's `repository` claim, a Buildkite token's pipeline mapped to a
repository, else 401/403), callback/callback_handler.py (a repository below L2 or not listed: 200 "ignored"; 100
callbacks a minute per repository, else 429 (tests may shorten the minute: `window`); nightly and periodic: one
`completed`, no dispatch record; else the dispatch record of (delivery, repository), else 400; the state machine of
utils/redis_helper.py per (delivery, repository, run id, attempt, job): in_progress once, then completed once, else 400
"invalid state transition"; run_id not an integer: 500, as the real one fails), and utils/hud.py with
torchci/lib/crcr/crcrUtils.ts (HUD refuses a callback without workflow.job_name or workflow.check_run_id, after the
relay wrote its state; the relay answers HUD's 400 as its own, naming only its reason phrase: "HUD rejected callback:
HTTP 400: Bad Request").

Its newer rules: test-infra PR #8803's utils/triage_verdict.py (an optional `workflow.triage_verdict`, checked by
verdict_problem(): a malformed one is dropped whole from what HUD gets while the callback is taken, recorded in
`dropped_verdicts`); RFC-0054's payload caps as HUD applies them (an optional `workflow.failed_tests`: over 1000
entries refused with HUD's 400 after the state was written; a message over 1024 characters or a stacktrace over 4096
cut by HUD, recorded in `truncated`); torchci/lib/crcr/crcrUtils.ts's validatePayloadSize (a body over 2 MiB: HUD's
413, after the state was written); the rate limit's window counts every request of a repository, those it refused
(429, without Retry-After) included; and the relay's Action's note that job names must be unique, since HUD keys its
rows on workflow.check_run_id.

Stricter than the real relay where that one would pass garbage on to GitHub's check runs or HUD (refused before
anything is written, "stricter than PyTorch's relay: ..."): a completed callback's conclusion must be a GitHub
check-run conclusion (and an in_progress one has none), its times ISO 8601 UTC with a Z, its test_results counts,
its failed_tests a list of objects whose fields have their JSON types; and a check_run_id names one job only (one
delivery, run, attempt and job name).

It plays the issuers too: token() signs with its own key what GitHub Actions or Buildkite would, and token_command()
is a command printing one, as crcr's CRCR_PYTORCH_RELAY_TOKEN_COMMAND runs it. It can be told to go down (502s, or
connections closed unanswered) and to lose its next answers after acting (the sender cannot know it got there).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import jwt

from fakegithub import rsa_key_pair
from loopback import serve_in_thread

PATH = "/github/callback"
AUDIENCE = "pytorch-cross-repo-ci-relay"
GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
BUILDKITE_ISSUER = "https://agent.buildkite.com"
SELF_REPORTED = ("nightly", "periodic")
CONCLUSIONS = ("success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
NO_ANSWER = 0  # Recorded.answered of a request left unanswered
MAX_BODY = 2 * 1024 * 1024  # bytes of a request body HUD takes (crcrUtils.ts validatePayloadSize)
MAX_FAILED_TESTS = 1000  # RFC-0054: entries of workflow.failed_tests HUD takes
MAX_MESSAGE, MAX_STACKTRACE = 1024, 4096  # characters of a failed test's message and stacktrace HUD keeps
FAILED_TEST_TEXTS = ("name", "classname", "message", "stacktrace")
# utils/triage_verdict.py
MAX_VERDICT_BYTES = 16384
MAX_EVIDENCE = 10
VERDICT_KEYS = ("schema_version", "category", "confidence", "summary", "suspected_upstream", "evidence",
                "reproduced_on_retry")
CATEGORIES = ("upstream", "backend", "infra", "flake", "unknown")
CONFIDENCES = ("high", "medium", "low")
SUSPECT_KEYS = ("pr", "commit", "reason")
EVIDENCE_KEYS = ("log_url", "job", "test", "excerpt")
COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}$")
TOKEN_SCRIPT = Path(__file__).with_name("oidc_token.py")


class Refusal(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    authorization: str
    body: dict | None
    answered: int  # the HTTP status it replied with, or NO_ANSWER
    detail: str
    at: float  # when it came (time.monotonic())


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024


class PyTorchRelayStandIn:
    def __init__(self, levels: dict[str, str], buildkite_pipelines: dict[tuple[str, str], str] | None = None,
                 rate_limit: int = 100, window: float = 60):
        """`levels`: the allowlist, downstream repository → L1..L4; `buildkite_pipelines`: ci_providers.yml's
        (organization_id, pipeline_id) → repository; `rate_limit` requests per `window` seconds per repository."""
        self.levels = {repo.casefold(): level for repo, level in levels.items()}
        self.buildkite_pipelines = buildkite_pipelines or {}
        self.rate_limit, self.window = rate_limit, window
        self._key_pem, self._public_key = rsa_key_pair()
        self._lock = threading.Lock()
        self._dispatched: set[tuple[str, str]] = set()
        self._states: dict[tuple, str] = {}
        self._recent: dict[str, deque] = {}
        self._jobs: dict[str, tuple] = {}  # check_run_id → the (delivery, run id, attempt, job name) it names
        self._down: int | None | bool = False  # False: up; else the answer to give (None: close unanswered)
        self._faults: list[int | None] = []
        self._lose_answers = 0
        self.requests: list[Recorded] = []
        self.forwarded: list[tuple[str, dict]] = []  # (the repository the token named, the body) HUD got, in order
        self.ignored: list[dict] = []
        self.dropped_verdicts: list[tuple[dict, str]] = []  # (the callback's body, why its verdict was dropped)
        self.truncated: list[str] = []  # what HUD cut of a failed test's texts
        self._server = _Server(("127.0.0.1", 0), self._handler())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{PATH}"

    def start(self) -> PyTorchRelayStandIn:
        serve_in_thread(self._server)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- what the tests tell it ---

    def dispatched(self, delivery_id: str, repo: str) -> None:
        """The DISPATCHED record its webhook side writes once it sent `repo` a repository_dispatch."""
        with self._lock:
            key = (delivery_id, repo.casefold())
            if key in self._dispatched:
                raise ValueError(f"delivery {delivery_id} already dispatched to {repo}: a duplicate DISPATCHED")
            self._dispatched.add(key)

    def go_down(self, answer: int | None = 502) -> None:
        """Every request answered `answer` (None: its connection closed unanswered), unread, until come_back()."""
        with self._lock:
            self._down = answer

    def come_back(self) -> None:
        with self._lock:
            self._down = False

    def fail_next(self, count: int, answer: int | None = 503) -> None:
        with self._lock:
            self._faults += [answer] * count

    def lose_next_answers(self, count: int) -> None:
        """The next `count` requests acted on (states written, forwarded), their connections closed unanswered."""
        with self._lock:
            self._lose_answers += count

    def token(self, repo: str, issuer: str = GITHUB_ISSUER, audience: str = AUDIENCE, lifetime: int = 300,
              **claims) -> str:
        """What the issuer would sign for a job of `repo` (GitHub: its `repository` claim)."""
        now = int(time.time())
        payload = {"iss": issuer, "aud": audience, "iat": now, "nbf": now, "exp": now + lifetime, **claims}
        if issuer == GITHUB_ISSUER:
            payload.setdefault("repository", repo)
        return jwt.encode(payload, self._key_pem, algorithm="RS256")

    def token_command(self, folder: Path) -> str:
        """A command printing a token for $CRCR_DOWNSTREAM_REPO with audience $CRCR_OIDC_AUDIENCE, signed with this
        stand-in's key (written to `folder`, readable by its owner only), as crcr runs its token command."""
        key = Path(folder) / "pytorch-relay-issuer.pem"
        key.write_text(self._key_pem)
        os.chmod(key, 0o600)
        return f"{sys.executable} {TOKEN_SCRIPT} {key} {GITHUB_ISSUER}"

    # --- what the tests read ---

    def callbacks(self, repo: str | None = None, delivery_id: str | None = None) -> list[dict]:
        """The callbacks it took and forwarded to HUD, in order (a repository's: the one its token named)."""
        with self._lock:
            return [body for verified, body in self.forwarded
                    if (repo is None or verified == repo.casefold())
                    and (delivery_id is None or body.get("delivery_id") == delivery_id)]

    # --- the handler's rules ---

    def _handle(self, method: str, path: str, authorization: str, raw: bytes) -> tuple[int, dict]:
        if path != PATH:
            raise Refusal(404, "Not found")
        if method != "POST":
            raise Refusal(405, "Method not allowed")
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            raise Refusal(400, "Invalid JSON body") from None
        repo = self._verified_repo(authorization)
        level = self.levels.get(repo)
        if level is None or level == "L1":
            self.ignored.append(body)
            return 200, {"ok": True, "status": "ignored"}
        self._within_rate(repo)
        if body.get("event_type", "") in SELF_REPORTED:
            status = self._parse(body)[1]
            if status != "completed":
                raise Refusal(400, f"nightly/periodic callbacks must have status 'completed', got {status!r}")
            self._refuse_garbage(body, status)
            return self._forward(body, repo, status, len(raw))
        delivery_id, status, run_id, run_attempt, job_name = self._parse(body)
        if (delivery_id, repo) not in self._dispatched:
            raise Refusal(400, "callback rejected: no matching dispatch record")
        if status not in ("in_progress", "completed"):
            raise Refusal(400, f"unknown callback status: {status!r}")
        key = (delivery_id, repo, run_id, run_attempt, job_name)
        before = self._states.get(key)
        if run_id == 0 or before != {"in_progress": None, "completed": "in_progress"}[status]:
            raise Refusal(400, f"callback rejected: invalid state transition delivery_id={delivery_id} repo={repo} "
                               f"status={status}")
        self._refuse_garbage(body, status)
        self._states[key] = status  # written before HUD is asked, as the real relay does
        return self._forward(body, repo, status, len(raw))

    def _verified_repo(self, authorization: str) -> str:
        token = authorization.removeprefix("Bearer ").strip()
        if not token:
            raise Refusal(401, "Missing authorization token")
        try:
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        except jwt.PyJWTError:
            raise Refusal(401, "Invalid authorization token") from None
        if issuer not in (GITHUB_ISSUER, BUILDKITE_ISSUER):
            raise Refusal(401, f"Unsupported OIDC issuer: {issuer}")
        try:
            claims = jwt.decode(token, self._public_key, algorithms=["RS256"], issuer=issuer, audience=AUDIENCE)
        except jwt.PyJWTError:
            raise Refusal(401, "Invalid authorization token") from None
        if issuer == GITHUB_ISSUER:
            if not claims.get("repository"):
                raise Refusal(401, "GitHub OIDC token missing 'repository' claim")
            return claims["repository"].casefold()
        pipeline = (claims.get("organization_id"), claims.get("pipeline_id"))
        if None in pipeline:
            raise Refusal(401, "Buildkite OIDC token missing organization_id or pipeline_id")
        if pipeline not in self.buildkite_pipelines:
            raise Refusal(403, "Buildkite pipeline not registered in ci_providers")
        return self.buildkite_pipelines[pipeline].casefold()

    def _within_rate(self, repo: str) -> None:
        """Every request counts, a refused one too: a client posting on through 429s stays refused."""
        now = time.monotonic()
        recent = self._recent.setdefault(repo, deque())
        while recent and recent[0] < now - self.window:
            recent.popleft()
        recent.append(now)
        if len(recent) > self.rate_limit:
            raise Refusal(429, f"rate limit exceeded for {repo}")

    @staticmethod
    def _parse(body: dict) -> tuple[str, str, int, int, str | None]:
        try:
            workflow = body["workflow"]
            delivery_id, status, _name = body["delivery_id"], workflow["status"], workflow["name"]
            run_id, run_attempt = workflow["run_id"], workflow.get("run_attempt", 1)
        except (KeyError, TypeError) as e:
            raise Refusal(400, f"callback body missing required field: {e}") from None
        try:
            return delivery_id, status, int(run_id), int(run_attempt), workflow.get("job_name")
        except ValueError:
            raise Refusal(500, "Internal server error") from None  # the real handler does not catch it

    def _refuse_garbage(self, body: dict, status: str) -> None:
        """This stand-in's stricter checks, before anything is written; the job the check_run_id names, once
        taken."""
        workflow = body["workflow"]
        problem = _shape_problem(workflow, status)
        check_run_id = workflow.get("check_run_id")
        job = (body["delivery_id"], str(workflow["run_id"]), str(workflow.get("run_attempt", 1)),
               workflow.get("job_name"))
        if problem is None and check_run_id not in (None, "") and self._jobs.get(str(check_run_id), job) != job:
            problem = f"check_run_id {check_run_id} names another job"
        if problem:
            raise Refusal(400, f"stricter than PyTorch's relay: {problem}")
        if check_run_id not in (None, ""):
            self._jobs[str(check_run_id)] = job

    def _forward(self, body: dict, repo: str, status: str, size: int) -> tuple[int, dict]:
        """The relay drops a malformed triage verdict; then HUD's turn: its size cap, required fields and caps."""
        workflow = body["workflow"]
        problem = verdict_problem(workflow["triage_verdict"]) if "triage_verdict" in workflow else None
        if problem:
            self.dropped_verdicts.append((body, problem))
            body = {**body, "workflow": {k: v for k, v in workflow.items() if k != "triage_verdict"}}
        if size > MAX_BODY:
            raise Refusal(413, "HUD rejected callback: HTTP 413: Payload Too Large")
        failed_tests = workflow.get("failed_tests") or []
        if any(workflow.get(field) in (None, "") for field in ("job_name", "check_run_id")) \
                or len(failed_tests) > MAX_FAILED_TESTS:
            raise Refusal(400, "HUD rejected callback: HTTP 400: Bad Request")
        for i, test in enumerate(failed_tests):
            for field, cap in (("message", MAX_MESSAGE), ("stacktrace", MAX_STACKTRACE)):
                if len(test.get(field, "")) > cap:
                    self.truncated.append(f"workflow.failed_tests[{i}].{field}: {len(test[field])} characters, "
                                          f"cut to {cap}")
        self.forwarded.append((repo, body))
        return 200, {"ok": True, "status": status}

    def _handler(self):
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                self._answer()

            def do_POST(self):
                self._answer()

            def _answer(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                authorization = self.headers.get("Authorization") or ""
                with stand_in._lock:
                    fault = stand_in._faults.pop(0) if stand_in._faults else stand_in._down
                    lose = False
                    if fault is not False:
                        status, answer = (fault, {"detail": "Service Unavailable"}) if fault else (NO_ANSWER, {})
                    else:
                        try:
                            status, answer = stand_in._handle(self.command, self.path.rstrip("/") or "/",
                                                              authorization, raw)
                        except Refusal as refusal:
                            status, answer = refusal.status, {"detail": refusal.detail}
                        if stand_in._lose_answers:
                            stand_in._lose_answers -= 1
                            lose = True
                    try:
                        body = json.loads(raw) if raw else None
                    except ValueError:
                        body = None
                    answered = NO_ANSWER if lose else status
                    stand_in.requests.append(Recorded(self.command, self.path, authorization, body, answered,
                                                      str(answer.get("detail", answer.get("status", ""))),
                                                      time.monotonic()))
                if answered == NO_ANSWER:
                    self.close_connection = True
                    return
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


def _shape_problem(workflow: dict, status: str) -> str | None:
    conclusion = workflow.get("conclusion")
    if status == "completed" and conclusion not in CONCLUSIONS:
        return f"workflow.conclusion {conclusion!r} is not a GitHub check-run conclusion"
    if status == "in_progress" and conclusion is not None:
        return f"workflow.conclusion {conclusion!r} on an in_progress callback"
    for field in ("started_at", "completed_at"):
        if workflow.get(field) is not None and not ISO_UTC.match(str(workflow[field])):
            return f"workflow.{field} {workflow[field]!r} is not ISO 8601 UTC"
    counts = workflow.get("test_results")
    if counts is not None and not (isinstance(counts, dict) and all(
            isinstance(counts.get(k), int) and counts[k] >= 0 for k in ("passed", "failed", "skipped"))):
        return f"workflow.test_results {counts!r} are not counts of passed, failed and skipped"
    return _failed_tests_problem(workflow.get("failed_tests"))


def _failed_tests_problem(failed_tests) -> str | None:
    if failed_tests is None:
        return None
    if not isinstance(failed_tests, list):
        return f"workflow.failed_tests is a {type(failed_tests).__name__}, not a list"
    for i, test in enumerate(failed_tests):
        where = f"workflow.failed_tests[{i}]"
        if not isinstance(test, dict):
            return f"{where} is a {type(test).__name__}, not an object"
        for field in FAILED_TEST_TEXTS:
            if field in test and not isinstance(test[field], str):
                return f"{where}.{field} {test[field]!r} is not a string"
        duration = test.get("duration", 0)
        if not _is_number(duration) or duration < 0:
            return f"{where}.duration {duration!r} is not a number of seconds"
    return None


def verdict_problem(verdict) -> str | None:
    """Why utils/triage_verdict.py drops `verdict` (a callback's workflow.triage_verdict); None when it keeps it.
    Its size is json.dumps's with its defaults (non-ASCII escaped), in bytes. An optional field, when present, must
    have its type (null included)."""
    if not isinstance(verdict, dict):
        return f"not an object but a {type(verdict).__name__}"
    size = len(json.dumps(verdict).encode())
    if size > MAX_VERDICT_BYTES:
        return f"{size} bytes of JSON, over {MAX_VERDICT_BYTES}"
    unknown = sorted(set(verdict) - set(VERDICT_KEYS))
    if unknown:
        return f"unknown keys {', '.join(unknown)}"
    version = verdict.get("schema_version")
    if type(version) is not int or version != 1:
        return f"schema_version {version!r} is not 1"
    if verdict.get("category") not in CATEGORIES:
        return f"category {verdict.get('category')!r} is not one of {', '.join(CATEGORIES)}"
    if verdict.get("confidence") not in CONFIDENCES:
        return f"confidence {verdict.get('confidence')!r} is not one of {', '.join(CONFIDENCES)}"
    if not isinstance(verdict.get("summary"), str) or not verdict["summary"]:
        return f"summary {verdict.get('summary')!r} is not a non-empty string"
    if "suspected_upstream" in verdict:
        if verdict["category"] != "upstream":
            return f"suspected_upstream with category {verdict['category']!r}, not 'upstream'"
        if problem := _suspect_problem(verdict["suspected_upstream"]):
            return f"suspected_upstream: {problem}"
    if "evidence" in verdict:
        if problem := _evidence_problem(verdict["evidence"]):
            return f"evidence: {problem}"
    if "reproduced_on_retry" in verdict and not isinstance(verdict["reproduced_on_retry"], bool):
        return f"reproduced_on_retry {verdict['reproduced_on_retry']!r} is not a boolean"
    return None


def _suspect_problem(suspect) -> str | None:
    if not isinstance(suspect, dict):
        return f"not an object but a {type(suspect).__name__}"
    unknown = sorted(set(suspect) - set(SUSPECT_KEYS))
    if unknown:
        return f"unknown keys {', '.join(unknown)}"
    if "pr" not in suspect and "commit" not in suspect:
        return "neither pr nor commit"
    if "pr" in suspect and (type(suspect["pr"]) is not int or suspect["pr"] < 1):
        return f"pr {suspect['pr']!r} is not a positive integer"
    if "commit" in suspect and not (isinstance(suspect["commit"], str) and COMMIT.match(suspect["commit"])):
        return f"commit {suspect['commit']!r} is not 7 to 40 hexadecimal digits"
    if "reason" in suspect and not isinstance(suspect["reason"], str):
        return f"reason {suspect['reason']!r} is not a string"
    return None


def _evidence_problem(evidence) -> str | None:
    if not isinstance(evidence, list):
        return f"not a list but a {type(evidence).__name__}"
    if len(evidence) > MAX_EVIDENCE:
        return f"{len(evidence)} entries, over {MAX_EVIDENCE}"
    for i, item in enumerate(evidence):
        if not isinstance(item, dict):
            return f"[{i}] is not an object but a {type(item).__name__}"
        unknown = sorted(set(item) - set(EVIDENCE_KEYS))
        if unknown:
            return f"[{i}] has unknown keys {', '.join(unknown)}"
        if problem := _plain_url_problem(item.get("log_url")):
            return f"[{i}].log_url {item.get('log_url')!r} {problem}"
        for field in EVIDENCE_KEYS[1:]:
            if field in item and not isinstance(item[field], str):
                return f"[{i}].{field} {item[field]!r} is not a string"
    return None


def _plain_url_problem(url) -> str | None:
    if not isinstance(url, str):
        return "is not a string"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "has whitespace or control characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "is no URL"
    if parts.scheme not in ("http", "https") or not host:
        return "is not an http(s) URL with a host"
    if "@" in parts.netloc:
        return "carries user information"
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
