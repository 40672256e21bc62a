"""The bisections as JSON for the UI's pages, read-only, under the crcr plugin's URL:

    GET /plugins/crcr/api/bisections?backend=NAME&limit=N   the latest bisections, newest first
    GET /plugins/crcr/api/bisections/<id>                   one, with its steps, its range and its culprits

Buildbot's REST API serves only Buildbot's own tables; the relay's bisections live in tables of its own (the
crcr-store service), so the plugin serves them beside its page. A bad query answers 400 and an unknown
bisection 404, each with {"error": message}.
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

from buildbot.www import resource
from twisted.internet import defer
from twisted.web.error import Error

from crcr.bisection.plan import Bisection as Plan
from crcr.buildmaster.www.readers import assert_reader, write_error
from crcr.config.errors import shown
from crcr.health.links import bisection_page, build_url
from crcr.store.bisections import Bisection, BisectionStep
from crcr.store.service import RelayStore, relay_store

DEFAULT_LIMIT = 20
MAX_LIMIT = 200
LIST_PARAMETERS = ("backend", "limit")
# A number as a URL gives it: ASCII digits only (str.isdigit takes '²', which int() refuses), and few enough for
# the database's INTEGER (ids are below 2**63) and for int() (which refuses thousands of digits).
NUMBER = re.compile(r"[0-9]{1,18}")


class JsonResource(resource.Resource):
    """Answers GET, to those the relay's Authz lets read (www/readers.py), with the JSON of `answer(request)`; a
    twisted.web.error.Error it raises gives its code and {"error": message}. A subclass answering something else
    than JSON says what in `content_type` and `encode`."""

    content_type = b"application/json; charset=utf-8"

    def render_GET(self, request):
        return self.asyncRenderHelper(request, self._render, writeError=partial(write_error, request))

    @defer.inlineCallbacks
    def _render(self, request):
        yield self.assert_allowed(request)
        body = yield self.answer(request)
        request.setHeader(b"content-type", self.content_type)
        return self.encode(body)

    def assert_allowed(self, request) -> defer.Deferred:
        """Fails with a twisted.web Error (its code, why) when the request may not read this."""
        return assert_reader(self.master, request)

    def answer(self, request) -> defer.Deferred:
        raise NotImplementedError

    def encode(self, body) -> bytes:
        return json.dumps(body).encode()

    def store(self) -> RelayStore:
        return relay_store(self.master)


def _refuse(code: int, message: str) -> Error:
    return Error(code, message.encode())


class BisectionsResource(JsonResource):
    """The list; its children are the bisections by id. `backends` gives the configured backends' names."""

    def __init__(self, master, backends):
        super().__init__(master)
        self.backends = backends

    def getChild(self, path: bytes, request):
        if path == b"":  # .../bisections/ is the list too
            return self
        return BisectionResource(self.master, path.decode(errors="replace"))

    @defer.inlineCallbacks
    def answer(self, request):
        backend, limit = _list_query(request.args)
        store = self.store()
        # The store lists one backend's bisections; "all" is every configured backend's, merged.
        found: list[Bisection] = []
        for name in [backend] if backend else self.backends():
            found += yield store.recent_bisections(name, limit)
        listed = []
        for bisection in sorted(found, key=lambda b: b.id, reverse=True)[:limit]:
            _, steps = yield store.bisection_with_steps(bisection.id)
            listed.append({**_summary(bisection, _planned(bisection)), "step_count": len(steps)})
        return {"bisections": listed}


class BisectionResource(JsonResource):
    def __init__(self, master, name: str):
        super().__init__(master)
        self.name = name

    @defer.inlineCallbacks
    def answer(self, request):
        bisectionid = int(self.name) if NUMBER.fullmatch(self.name) else None
        found = None if bisectionid is None else (yield self.store().bisection_with_steps(bisectionid))
        if found is None:
            raise _refuse(404, f"no bisection {shown(self.name)}")
        bisection, steps = found
        planned = _planned(bisection)
        trigger = yield self._build(bisection.trigger_buildid)
        step_builds = []
        for step in steps:
            step_builds.append((yield self._build(step.buildid)))
        return {
            **_summary(bisection, planned),
            "trigger_build": trigger,
            "commits": planned["commits"],
            "tests": planned["tests"],
            "steps": [_step(step, build) for step, build in zip(steps, step_builds)],
            "next": planned["next"],
            "unresolved": planned["unresolved"],
        }

    @defer.inlineCallbacks
    def _build(self, buildid: int | None):
        build = None if buildid is None else (yield self.master.data.get(("builds", buildid)))
        if build is None:
            return None
        return {"buildid": buildid, "builderid": build["builderid"], "number": build["number"],
                "url": build_url(build['builderid'], build['number'])}


def query_parameters(args: dict[bytes, list[bytes]], known: tuple[str, ...]) -> dict[str, str]:
    """A request's query as {name: value}: an unknown parameter, or one given twice, answers 400 naming it."""
    query = {
        name.decode(errors="replace"): [value.decode(errors="replace") for value in values]
        for name, values in args.items()
    }
    unknown = sorted(set(query) - set(known))
    if unknown:
        raise _refuse(400, f"unknown parameter {', '.join(unknown)} (known: {', '.join(known) or 'none'})")
    for name, values in query.items():
        if len(values) > 1:
            raise _refuse(400, f"{name}: give it once, not {len(values)} times")
    return {name: values[0] for name, values in query.items()}


def _list_query(args: dict[bytes, list[bytes]]) -> tuple[str | None, int]:
    query = query_parameters(args, LIST_PARAMETERS)
    backend = query.get("backend")
    if backend is not None and not backend.strip():
        raise _refuse(400, "backend: must not be empty (leave it out for every backend)")
    limit = query.get("limit", str(DEFAULT_LIMIT))
    if not (NUMBER.fullmatch(limit) and 1 <= int(limit) <= MAX_LIMIT):
        raise _refuse(400, f"limit: must be a whole number from 1 to {MAX_LIMIT} (got {shown(limit)})")
    return backend, int(limit)


def _planned(bisection: Bisection) -> dict[str, Any]:
    """What the planner's saved state tells (its describe()): the range, the culprits, the next build. A state
    this relay cannot read is shown as such rather than failing the whole answer."""
    try:
        plan = Plan.from_json(bisection.plan)
    except ValueError as error:
        return {"commits": [], "tests": [], "next": None, "culprits": [], "unresolved": [], "plan_error": str(error)}
    return {**plan.describe(), "tests": list(plan.tests), "plan_error": None}


def _summary(bisection: Bisection, planned: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": bisection.id,
        "url": bisection_page(bisection.id),
        "backend": bisection.backend,
        "branch": bisection.branch,
        "good_sha": bisection.good_sha,
        "bad_sha": bisection.bad_sha,
        "state": bisection.state,
        "started_at": bisection.started_at,
        "ended_at": bisection.ended_at,
        "trigger_buildid": bisection.trigger_buildid,
        "requested_by": bisection.requested_by,
        "commit_count": len(planned["commits"]),
        "culprits": planned["culprits"],
        "plan_error": planned["plan_error"],
    }


def _step(step: BisectionStep, build: dict | None) -> dict[str, Any]:
    return {
        "position": step.position,
        "sha": step.sha,
        "tests": step.tests,
        "outcome": step.outcome,
        "results": step.results,
        "brid": step.brid,
        "build": build,
        "started_at": step.started_at,
        "ended_at": step.ended_at,
    }
