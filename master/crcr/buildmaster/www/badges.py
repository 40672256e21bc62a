"""README badges at the web root (SVG from crcr.health.badges; see there why not Buildbot's buildbot-badges):

    GET /badges/<backend>.svg             "crcr <backend> | passing" (3 failing, failing, error, pending, no
                                          verdict yet): the backend's state, never "passing" while tests fail
    GET /badges/<backend>/validated.svg   "validated within | 2h 10m": the 7-day p95 from upstream commit to verdict

An unknown backend answers 404 with a badge saying so, so that a README's broken link shows why. Sent with
Cache-Control: no-cache, as GitHub's image proxy (camo) otherwise keeps a badge for good.
"""

from __future__ import annotations

from urllib.parse import unquote

from twisted.internet import defer
from twisted.web.error import Error

from crcr.buildmaster.www.reading import ReadResource
from crcr.health import badges

RANGE = "7d"  # the badges' promise: "validated within" over the last 7 days


class BadgesResource(ReadResource):
    content_type = b"image/svg+xml; charset=utf-8"

    @defer.inlineCallbacks
    def answer(self, request):
        name, kind = _badge_of([unquote(p.decode(errors="replace")) for p in request.postpath])
        health = self.health()
        rows = (yield health.summary(RANGE))["backends"]
        row = next((r for r in rows if r["backend"] == name), None)
        if row is None:
            request.setResponseCode(404)
            svg = badges.no_backend_badge(name)
        elif kind == "validated":
            latency = row["latency"]
            svg = badges.validated_badge(latency["p95"] if latency["decided"] else None)
        else:
            state = row["state"]
            # No verdict yet: whether commits wait or build for one, which only the ledger's counts tell.
            pending = state is None and (yield health.metrics())["backends"][name]["commits"]["pending"] > 0
            svg = badges.verdict_badge(name, state, row["failing_tests"], pending=pending)
        request.setHeader(b"cache-control", b"no-cache")
        return svg.encode()


def _badge_of(path: list[str]) -> tuple[str, str]:
    """(backend, "verdict" | "validated") of the path under /badges; 404 for any other path."""
    if len(path) == 1 and path[0].endswith(".svg") and len(path[0]) > len(".svg"):
        return path[0].removesuffix(".svg"), "verdict"
    if len(path) == 2 and path[0] and path[1] == "validated.svg":
        return path[0], "validated"
    raise Error(404, b"badges are at /badges/<backend>.svg and /badges/<backend>/validated.svg")
