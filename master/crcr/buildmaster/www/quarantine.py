"""A backend's flaky tests in quarantine (store/quarantine.py), under the crcr plugin's URL:

    GET  /plugins/crcr/api/quarantine/<backend>   its settings, the tests in quarantine, its latest moves, and
                                                  whether the signed-in user may move them (may_move)
    POST /plugins/crcr/api/quarantine/<backend>   a move by hand: {"move": "in"|"out", "suite", "test", "why"}

A move is for the backend's maintainers and the relay's admins (auth/authorization.py's roles), recorded with the
signed-in user and their why. The body must be JSON sent as such (Content-Type application/json: a form of another
site cannot send it without the browser asking first). Refusals change nothing and say why, as {"error": message}:
415 another content type, 400 a body or field that is not right (naming it), 404 an unknown backend, 403 the role
missing, 409 a test in quarantine already (in) or not in it (out).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import partial

from twisted.internet import defer
from twisted.web.error import Error

from crcr.buildmaster.auth.authorization import ADMIN_ROLE, maintainer_role
from crcr.buildmaster.util.relay_services import quarantine_keeper
from crcr.buildmaster.www.bisections import JsonResource
from crcr.buildmaster.www.readers import write_error
from crcr.config.errors import shown
from crcr.config.limits import MAX_TEXT
from crcr.store.quarantine import MOVES, Move

JSON = b"application/json"
FIELDS = ("move", "suite", "test", "why")
MAX_TEST_ID = 10_000  # characters: a node id has no limit of pytest's; a parametrized one runs to a few thousand
MAX_BODY = 64 * 1024


def _refuse(code: int, message: str) -> Error:
    return Error(code, message.encode())


class QuarantineResource(JsonResource):
    """Its children are the backends by name."""

    def getChild(self, path: bytes, request):
        return BackendQuarantine(self.master, path.decode(errors="replace"))


class BackendQuarantine(JsonResource):
    def __init__(self, master, backend: str):
        super().__init__(master)
        self.backend = backend

    def _suites(self) -> tuple[str, ...]:
        suites = quarantine_keeper(self.master).suites.get(self.backend)
        if suites is None:
            raise _refuse(404, f"no backend {shown(self.backend)}")
        return suites

    @defer.inlineCallbacks
    def answer(self, request):
        self._suites()
        store = self.store()
        return {
            "backend": self.backend,
            "settings": asdict(quarantine_keeper(self.master).policies[self.backend]),
            "may_move": self._missing_role(request) is None,
            "quarantined": [asdict(test) for test in (yield store.quarantined_of(self.backend))],
            "moves": [asdict(move) for move in (yield store.quarantine_moves(self.backend))],
        }

    def render_POST(self, request):
        return self.asyncRenderHelper(request, self._move, writeError=partial(write_error, request))

    @defer.inlineCallbacks
    def _move(self, request):
        content_type = (request.getHeader(b"content-type") or b"").partition(b";")[0].strip().lower()
        if content_type != JSON:
            raise _refuse(415, f"send the move as JSON, with Content-Type {JSON.decode()} (got "
                               f"{shown(content_type.decode(errors='replace')) if content_type else 'none'})")
        suites = self._suites()
        missing = self._missing_role(request)
        if missing is not None:
            raise _refuse(403, missing)
        body = _json_body(request)
        _check_fields(body, suites)
        move = Move(self.backend, body["suite"], body["test"], body["move"],
                    who=self.master.www.getUserInfos(request)["username"], why=body["why"].strip(),
                    at=int(self.master.reactor.seconds()), automatic=False)
        if not (yield quarantine_keeper(self.master).move_by_hand(move)):
            state = "already in" if move.move == "in" else "not in"
            raise _refuse(409, f"{move.suite} test {shown(move.test)} is {state} {self.backend}'s quarantine: "
                               "nothing changed")
        request.setHeader(b"content-type", self.content_type)
        return self.encode({"moved": asdict(move)})

    def _missing_role(self, request) -> str | None:
        """Why the request's user may not move the backend's tests (None: they may)."""
        www = self.master.www
        user = www.getUserInfos(request)
        needed = maintainer_role(self.backend)
        if {needed, ADMIN_ROLE} & set(www.authz.getRolesFromUser(user)):
            return None
        who = f"signed in as {user['username']}" if user.get("username") else "not signed in"
        return (f"{who}: moving a test of {self.backend} in or out of quarantine needs the role '{needed}' "
                f"(its maintainers) or '{ADMIN_ROLE}'")


def _json_body(request) -> dict:
    raw = request.content.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise _refuse(400, f"the body is over {MAX_BODY} bytes")
    try:
        body = json.loads(raw)
    except ValueError as e:  # a JSONDecodeError, or bytes that are no UTF-8
        raise _refuse(400, f"the body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise _refuse(400, f"the body must be a JSON object with {', '.join(FIELDS)}")
    return body


def _check_fields(body: dict, suites: tuple[str, ...]) -> None:
    """400 naming the first field that is missing, unknown or not right."""
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise _refuse(400, f"unknown field {', '.join(map(shown, unknown))} (the fields: {', '.join(FIELDS)})")
    for name in FIELDS:
        if not isinstance(body.get(name), str):
            raise _refuse(400, f"{name}: a string is required (got {shown(body.get(name))})")
    if body["move"] not in MOVES:
        raise _refuse(400, f"move: must be 'in' or 'out' (got {shown(body['move'])})")
    if body["suite"] not in suites:
        raise _refuse(400, f"suite: {shown(body['suite'])} is no suite of this backend (it has: {', '.join(suites)})")
    test = body["test"]
    if not test.strip() or test != test.strip() or "\n" in test or len(test) > MAX_TEST_ID:
        raise _refuse(400, f"test: must be a test's node id as pytest names it, on one line, at most {MAX_TEST_ID} "
                           f"characters (got {shown(test)})")
    if not body["why"].strip() or len(body["why"]) > MAX_TEXT:
        raise _refuse(400, f"why: say why, in at most {MAX_TEXT} characters (got {shown(body['why'])})")
