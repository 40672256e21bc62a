"""`crcr worker resume UNIT` against a stand-in for the relay's REST API on loopback, answering as Buildbot's does:
what is asked, what is printed, and the refusal of a unit the relay does not have. The run against a real master is
end to end (test_fan_out_e2e.py's unit taken out and resumed)."""

from __future__ import annotations

import json

import pytest

from clirun import InProcessCrcr
from crcr.names import RELAY_WORKER
from loopback import JsonHandler, LoopbackServer

PAUSED_UNIT, BUSY_UNIT = "lab-spyre-0", "lab-spyre-1"
REASON = "3 infrastructure failures in a row"


class FakeRelay(LoopbackServer):
    """Buildbot's /api/v2/workers, one worker paused, and its answers to an unknown worker (Buildbot's 404 text)
    and to JSON-RPC control calls. Records the calls."""

    WORKERS = [{"workerid": 1, "name": RELAY_WORKER, "paused": False, "pause_reason": None},
               {"workerid": 7, "name": PAUSED_UNIT, "paused": True, "pause_reason": REASON},
               {"workerid": 8, "name": BUSY_UNIT, "paused": False, "pause_reason": None}]

    def __init__(self):
        self.posted: list[tuple[str, dict]] = []
        super().__init__(self._handler())

    def _handler(self):
        relay = self

        class Handler(JsonHandler):
            def do_GET(self):
                path = self.path.split("?")[0].removeprefix("/api/v2/")
                named = [w for w in relay.WORKERS if path in (f"workers/{w['name']}", f"workers/{w['workerid']}")]
                if path == "workers" or named:
                    found = relay.WORKERS if path == "workers" else named
                    self.reply(200, {"workers": found, "meta": {"total": len(found)}})
                else:
                    self.reply(404, {"error": "not found while getting from WorkerEndpoint with arguments "
                                              f"ResultSpec(**{{}}) and {{'name': '{path.removeprefix('workers/')}'}}"})

            def do_POST(self):
                relay.posted.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
                self.reply(200, {"jsonrpc": "2.0", "id": 1, "result": None})

        return Handler


@pytest.fixture
def relay():
    with FakeRelay() as fake:
        yield fake


@pytest.fixture
def crcr(monkeypatch, capsys, relay):
    return InProcessCrcr(monkeypatch, capsys, env={"CRCR_BUILDBOT_URL": relay.url})


def test_a_paused_unit_is_unpaused_as_the_ui_does(crcr, relay):
    resumed = crcr("worker", "resume", PAUSED_UNIT)

    assert (resumed.returncode, resumed.stdout) == (0, f"{PAUSED_UNIT} resumed (it was paused: {REASON})\n")
    assert [(path, body["method"]) for path, body in relay.posted] == [("/api/v2/workers/7", "unpause")]


def test_a_unit_not_paused_is_left_alone(crcr, relay):
    """Nothing changed, not even its count of failures in a row, which a resume starts again."""
    resumed = crcr("worker", "resume", BUSY_UNIT)

    assert (resumed.returncode, resumed.stdout) == (0, f"{BUSY_UNIT} was not paused; nothing changed\n")
    assert relay.posted == []


def test_an_unknown_unit_is_refused_naming_the_units_the_relay_has(crcr, relay):
    refused = crcr("worker", "resume", "lab-spyre-9")

    assert refused.returncode != 0 and relay.posted == []
    assert refused.stderr == (f"error: no unit 'lab-spyre-9' on the relay at {relay.url} (it has: {PAUSED_UNIT}, "
                              f"{BUSY_UNIT})\n")
