"""`crcr bisect` (and `crcr force`, which asks a force scheduler the same way) against a stand-in for the relay's
REST API on loopback: what is sent, what is printed, and each refusal. The run against a real master is end to end
(test_bisect*_e2e.py)."""

from __future__ import annotations

import json

import pytest

from clirun import InProcessCrcr
from harness import free_port
from loopback import JsonHandler, LoopbackServer

GOOD, BAD = "1a2b3c4d5e", "9f8e7d6c5b"
SCHEDULERS = ["force-spyre", "force-aiu", "bisect-spyre", "bisect-aiu"]


class FakeRelay(LoopbackServer):
    """Answers as a relay's Buildbot does: GET /api/v2/forceschedulers lists `schedulers`; a JSON-RPC POST to
    one of them gets `answer` (HTTP status, JSON body). Records every request."""

    def __init__(self, schedulers: list[str]):
        self.reset(schedulers)
        super().__init__(self._handler())

    def reset(self, schedulers: list[str]) -> None:
        self.schedulers = schedulers
        self.answer: tuple[int, dict] = (500, {"error": "no answer set"})
        self.requests: list[tuple[str, str, dict | None]] = []

    def posted(self) -> list[tuple[str, dict]]:
        return [(path, body) for method, path, body in self.requests if method == "POST"]

    def _handler(self):
        relay = self

        class Handler(JsonHandler):
            def do_GET(self):
                relay.requests.append(("GET", self.path, None))
                if self.path == "/api/v2/forceschedulers":
                    listed = [{"name": name, "builder_names": [name.split("-", 1)[1]]} for name in relay.schedulers]
                    self.reply(200, {"forceschedulers": listed, "meta": {"total": len(listed)}})
                else:
                    self.reply(404, {"error": "Invalid path: " + self.path})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                relay.requests.append(("POST", self.path, body))
                self.reply(*relay.answer)

        return Handler


@pytest.fixture(scope="module")
def running_relay():
    with FakeRelay(SCHEDULERS) as fake:
        yield fake


@pytest.fixture
def relay(running_relay):
    """The module's stand-in, as each test starts it: the usual schedulers, no answer set, nothing recorded."""
    running_relay.reset(SCHEDULERS)
    return running_relay


@pytest.fixture
def crcr(monkeypatch, capsys, relay):
    """`crcr` with the settings pointing at the stand-in (as CRCR_BUILDBOT_URL does on a real deployment)."""
    return InProcessCrcr(monkeypatch, capsys, env={"CRCR_BUILDBOT_URL": relay.url})


def started(bisection: int, commits: int, tests: list[str], url: str = "http://relay.example/") -> tuple[int, dict]:
    """The relay's answer to a bisection it started."""
    result = {"bisection": bisection, "commits": commits, "tests": tests, "url": f"{url}#/bisections/{bisection}"}
    return 200, {"jsonrpc": "2.0", "id": 1, "result": result}


def refused(message) -> tuple[int, dict]:
    """Buildbot's answer to a refused form: HTTP 400, the JSON-RPC error's message {field: problem}."""
    return 400, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": message}}


# --- what is sent and printed ---


def test_bisect_asks_the_backends_bisect_scheduler_and_says_where_to_follow_it(crcr, relay):
    relay.answer = started(3, 8, ["ops::test_ops.py::test_add", "ops::test_ops.py::test_mul"])

    result = crcr("bisect", "spyre", GOOD, BAD, "--test", "ops::test_ops.py::test_add",
                  "--test", "test_ops.py::test_mul", "--reason", "nightly went red")

    assert result.returncode == 0, result.stderr
    assert relay.posted() == [(
        "/api/v2/forceschedulers/bisect-spyre",
        {"jsonrpc": "2.0", "id": 1, "method": "force",
         "params": {"good": GOOD, "bad": BAD, "tests": "ops::test_ops.py::test_add\ntest_ops.py::test_mul",
                    "reason": "nightly went red"}},
    )]
    assert result.stdout == (
        "bisection 3 of spyre: 8 commits, 2 tests (ops::test_ops.py::test_add, ops::test_ops.py::test_mul)\n"
        "follow it at http://relay.example/#/bisections/3\n"
    )
    assert result.stderr == ""


def test_without_tests_the_relay_picks_them_and_the_summary_shortens_a_long_list(crcr, relay):
    relay.answer = started(4, 1, ["ops::a", "ops::b", "ops::c", "ops::d", "ops::e"])

    result = crcr("bisect", "aiu", GOOD, BAD)

    assert result.returncode == 0, result.stderr
    params = relay.posted()[0][1]["params"]
    assert params == {"good": GOOD, "bad": BAD, "tests": "", "reason": "bisected from the command line"}
    assert result.stdout == (
        "bisection 4 of aiu: 1 commit, 5 tests (ops::a, ops::b, ops::c, +2 more)\n"
        "follow it at http://relay.example/#/bisections/4\n"
    )


def test_url_option_names_the_relay(crcr, relay):
    relay.answer = started(5, 2, ["whole-suite"])

    result = crcr("bisect", "spyre", GOOD, BAD, "--url", relay.url + "/", CRCR_BUILDBOT_URL="http://127.0.0.1:1/")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("bisection 5 of spyre: 2 commits, 1 test (whole-suite)\n")


# --- refusals ---


def test_refused_fields_are_each_named(crcr, relay):
    relay.answer = refused({
        "good": "commit '1a2b3c4d5e' is not on any followed upstream branch (main)",
        "tests": "'test_x': name its suite, as SUITE::NODE_ID (suites: ops, models)",
    })

    result = crcr("bisect", "spyre", GOOD, BAD, "--test", "test_x")

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: good: commit '1a2b3c4d5e' is not on any followed upstream branch (main); "
        "tests: 'test_x': name its suite, as SUITE::NODE_ID (suites: ops, models)\n"
    )


def test_an_anonymous_refusal_is_shown_in_its_words_with_how_to_sign_in(crcr, relay):
    relay.answer = (403, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "you need to be logged in"}})

    result = crcr("bisect", "spyre", GOOD, BAD)

    assert (result.returncode, result.stderr) == (1, (
        f"error: the relay at {relay.url} refused an anonymous request (you need to be logged in): sign in with "
        "--user NAME (or CRCR_USER) and the password in CRCR_PASSWORD (asked at a terminal), or, on a relay that "
        "signs in with GitHub, with a GitHub token in CRCR_GITHUB_TOKEN\n"))


def test_an_unknown_backend_lists_the_backends_that_can_be_bisected(crcr, relay):
    relay.schedulers = ["force-spyre", "force-aiu", "force-cpu-only", "bisect-spyre", "bisect-aiu"]

    result = crcr("bisect", "nope", GOOD, BAD)

    assert result.returncode == 1
    assert result.stderr == f"error: no backend 'nope' on the relay at {relay.url} (it has: aiu, spyre)\n"
    assert relay.posted() == [], "nothing was asked of a scheduler"


def test_force_lists_only_the_backends_it_can_force(crcr, relay):
    # The bisect schedulers are force schedulers too: the relay lists them all together.
    result = crcr("force", "nope", "main")

    assert result.returncode == 1
    assert result.stderr == f"error: no backend 'nope' on the relay at {relay.url} (it has: aiu, spyre)\n"


def test_force_asks_the_backends_force_scheduler(crcr, relay):
    relay.answer = (200, {"jsonrpc": "2.0", "id": 1, "result": [12, {"3": 40}]})

    result = crcr("force", "spyre", "main")

    assert result.returncode == 0, result.stderr
    assert relay.posted()[0][0] == "/api/v2/forceschedulers/force-spyre"
    assert result.stdout == f"requested: buildset 12, build request 40\nfollow it at {relay.url}/#/buildrequests/40\n"


def test_an_unreachable_relay_is_said_so(crcr):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    result = crcr("bisect", "spyre", GOOD, BAD, "--url", url)

    assert result.returncode == 1
    assert result.stderr == f"error: cannot reach the relay at {url}: [Errno 111] Connection refused\n"


def test_something_else_than_a_relay_is_said_so(crcr, relay):
    url = relay.url + "/not-buildbot"  # an address with a wrong path: no /api/v2 there

    result = crcr("bisect", "spyre", GOOD, BAD, "--url", url)

    assert result.returncode == 1
    assert result.stderr == (
        f"error: the relay at {url} did not list its force schedulers: "
        "Invalid path: /not-buildbot/api/v2/forceschedulers\n"
    )


@pytest.mark.parametrize(
    "args, missing",
    [(["spyre", GOOD], "BAD"), (["spyre"], "GOOD, BAD"), ([], "BACKEND, GOOD, BAD")],
)
def test_backend_good_and_bad_are_required(crcr, relay, args, missing):
    result = crcr("bisect", *args)

    assert result.returncode == 2
    assert result.stderr.endswith(f"error: the following arguments are required: {missing}\n")
    assert relay.requests == []
