"""The relay's health as JSON and SVG charts for the UI's health pages, read-only, under the crcr plugin's URL:

    GET /plugins/crcr/api/health?range=7d                          every backend's row, worst first
    GET /plugins/crcr/api/health/<backend>?range=7d                one backend's page
    GET /plugins/crcr/api/health/<backend>/test?id=<node id>       one test of it
    GET /plugins/crcr/api/health/<backend>/commits/<sha>           one upstream commit of it (a prefix of 7+ digits)
    GET /plugins/crcr/api/health/<backend>/charts/{latency,pass_rate,queue}.svg?range=7d

Each asks the RelayHealth service (buildmaster/services/every_master/health.py), whose answers are the contract of
docs/health.md; these resources only read the query and hand the answer on. A question the service
cannot answer (an unknown backend, range or commit) answers its HealthQueryError's code with {"error": message},
as does an unknown or repeated query parameter (400).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote

from twisted.internet import defer
from twisted.web.error import Error

from crcr.buildmaster.www.bisections import query_parameters
from crcr.buildmaster.www.reading import HealthReader
from crcr.health import charts
from crcr.health.errors import HealthQueryError

RANGE = ("range",)
CHARTS: dict[str, Callable[[dict], str]] = {
    "latency.svg": charts.latency_chart,
    "pass_rate.svg": charts.pass_rate_chart,
    "queue.svg": charts.queue_chart,
}


class HealthJson(HealthReader):
    """Asks the health service what `ask(health, query)` asks, with the request's query parameters (those of
    `parameters` only)."""

    parameters: tuple[str, ...] = ()

    @defer.inlineCallbacks
    def answer(self, request):
        query = query_parameters(request.args, self.parameters)
        health = self.health()
        try:
            return (yield self.ask(health, query))
        except HealthQueryError as refused:
            raise Error(refused.code, refused.message.encode()) from None

    def ask(self, health, query: dict[str, str]) -> defer.Deferred:
        raise NotImplementedError


class SummaryResource(HealthJson):
    """/health: the summary; its children are the backends by name."""

    parameters = RANGE

    def getChild(self, path: bytes, request):
        if path == b"":  # .../health/ is the summary too
            return self
        return BackendResource(self.master, _segment(path))

    def ask(self, health, query):
        return health.summary(**query)


class OfBackend(HealthJson):
    """A resource about one backend's health: its page or a part of it."""

    def __init__(self, master, backend: str):
        super().__init__(master)
        self.backend = backend


class BackendResource(OfBackend):
    parameters = RANGE

    def getChild(self, path: bytes, request):
        if path == b"":
            return self
        if path == b"test":
            return OneTestResource(self.master, self.backend)
        if path == b"commits":
            return CommitsResource(self.master, self.backend)
        if path == b"charts":
            return ChartsResource(self.master, self.backend)
        return NotFound(self.master, f"no page '{_segment(path)}' of a backend's health (pages: test, commits, "
                                     f"charts)")

    def ask(self, health, query):
        return health.backend(self.backend, **query)


class OneTestResource(OfBackend):
    parameters = ("id",)

    def ask(self, health, query):
        test_id = query.get("id", "")
        if not test_id.strip():
            raise Error(400, b"id: give the test's node id, as in test?id=suite::path/test_x.py::test_y")
        return health.test(self.backend, test_id)


class CommitsResource(OfBackend):
    """/commits: only its children, the commits by sha."""

    def getChild(self, path: bytes, request):
        if path == b"":
            return self
        return CommitResource(self.master, self.backend, _segment(path))

    def ask(self, health, query):
        raise Error(404, b"give a commit: commits/<sha or a prefix of at least 7 hex digits>")


class CommitResource(OfBackend):
    def __init__(self, master, backend: str, sha: str):
        super().__init__(master, backend)
        self.sha = sha

    def ask(self, health, query):
        return health.commit(self.backend, self.sha)


class ChartsResource(OfBackend):
    """/charts: only its children, the charts by file name."""

    def getChild(self, path: bytes, request):
        name = _segment(path)
        if name in CHARTS:
            return ChartResource(self.master, self.backend, CHARTS[name])
        return NotFound(self.master, f"no chart '{name}' (charts: {', '.join(CHARTS)})")

    def ask(self, health, query):
        raise Error(404, f"give a chart: charts/<{' | '.join(CHARTS)}>".encode())


class ChartResource(OfBackend):
    """A chart of the backend's series over the range, drawn from the backend page's answer."""

    parameters = RANGE
    content_type = b"image/svg+xml; charset=utf-8"

    def __init__(self, master, backend: str, draw: Callable[[dict], str]):
        super().__init__(master, backend)
        self.draw = draw

    @defer.inlineCallbacks
    def ask(self, health, query):
        page = yield health.backend(self.backend, **query)
        return self.draw(page["series"])

    def encode(self, body: str) -> bytes:
        return body.encode()


class NotFound(HealthJson):
    def __init__(self, master, message: str):
        super().__init__(master)
        self.message = message

    def ask(self, health, query):
        raise Error(404, self.message.encode())


def _segment(path: bytes) -> str:
    """A path segment as the UI quoted it (encodeURIComponent)."""
    return unquote(path.decode(errors="replace"))
