"""GET /metrics: RelayHealth.metrics() in Prometheus's text format, written by prometheus-client.

Each scrape builds a fresh CollectorRegistry holding one collector of that scrape's figures: nothing is kept
between scrapes (no global registry), so a backend removed from the configuration leaves the text at once.

Who reads: anyone the relay's Authz lets read (everyone, or with CRCR_REQUIRE_SIGN_IN a signed-in session), and a
scrape carrying the secrets folder's metrics-token as its bearer token (Prometheus's `authorization`), which has no
session to sign in with. A request with any other Authorization is refused (401): a scrape configured wrong says so
rather than reading as anonymous.
"""

from __future__ import annotations

import hmac

from buildbot.config.errors import ConfigErrors
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from twisted.internet import defer
from twisted.python import log
from twisted.web.error import Error

from crcr.buildmaster.services.every_master.unit_figures import DAYS
from crcr.buildmaster.www.reading import ReadResource
from crcr.config.secretfiles import METRICS_TOKEN
from crcr.health.ranges import DEFAULT_RANGE
from crcr.health.readiness import DEMOTION_DAYS, JUDGED_STATES, PROMOTION_DAYS
from crcr.health.state import STATES

MINUTE, HOUR, DAY = 60, 3600, 86400
# From 5 minutes to 2 days: the promises vendors make ("within N hours") fall between.
LATENCY_BUCKETS = [5 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 12 * HOUR, DAY, 2 * DAY]


BEARER = b"bearer"  # the scheme's name, which HTTP compares ignoring case


class MetricsResource(ReadResource):
    content_type = CONTENT_TYPE_LATEST.encode()

    def assert_allowed(self, request):
        authorization = request.getHeader(b"authorization")
        if authorization is None:
            return super().assert_allowed(request)
        return self._assert_scrape_token(request, authorization)

    @defer.inlineCallbacks
    def _assert_scrape_token(self, request, authorization: bytes):
        scheme, _, given = authorization.strip().partition(b" ")
        expected = yield scrape_token(self.master)
        # compare_digest: as long whatever the first differing byte, so timing tells nothing of the token.
        if scheme.lower() != BEARER or expected is None or not hmac.compare_digest(given.strip(), expected):
            request.setHeader(b"www-authenticate", b'Bearer realm="crcr"')
            raise Error(401, f"/metrics takes the relay's scrape token: Authorization: Bearer <the secrets "
                             f"folder's {METRICS_TOKEN}>; that was not it".encode())

    @defer.inlineCallbacks
    def answer(self, request):
        figures = yield self.health().metrics()
        request.setHeader(b"cache-control", b"no-cache")  # each scrape is now's figures, whatever lies between
        return metrics_text(figures)


@defer.inlineCallbacks
def scrape_token(master):
    """The secrets folder's metrics-token as bytes, read at each scrape (a rotation needs no reconfig); None when
    there is none, or none usable (readable by others: the secrets provider refuses it, saying why)."""
    secrets = master.namedServices.get("secrets")
    try:
        found = (yield secrets.get(METRICS_TOKEN)) if secrets is not None else None
    except ConfigErrors as e:  # what SecretInAFile's check raises outside a configuration's load
        log.msg(f"crcr: /metrics refused a bearer token (401): secret '{METRICS_TOKEN}' unusable: {e}")
        return None
    return found.value.encode() if found is not None and found.value else None


def metrics_text(figures: dict) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Figures(figures))
    return generate_latest(registry)


class _Figures:
    """A prometheus-client custom collector of one metrics() dict (its shape: docs/health.md)."""

    def __init__(self, figures: dict):
        self.figures = figures

    def collect(self):
        backends = self.figures["backends"]
        states = GaugeMetricFamily("crcr_backend_state", "The backend's state, 1 for the one it is in (all 0 before "
                                  "its first verdict): failing (its newest upstream verdict a failure), "
                                  "known_failures (tests still fail at its tip), error, passing",
                                  labels=["backend", "state"])
        commits = GaugeMetricFamily("crcr_commits", "Upstream commits in the relay's ledger (retained history), "
                                    "by verdict state (infrastructure: errors the hardware gave, apart from the "
                                    "relay's); pending ones wait or build", labels=["backend", "state"])
        latency = HistogramMetricFamily("crcr_commit_verdict_latency_seconds", "Time from an upstream commit's "
                                        "arrival to its verdict, over the decided commits retained", labels=["backend"])
        queue = GaugeMetricFamily("crcr_queue_length", "Commits waiting for a unit", labels=["backend"])
        oldest = GaugeMetricFamily("crcr_oldest_queued_age_seconds", "Age of the oldest commit waiting for a unit "
                                   "(absent when none waits)", labels=["backend"])
        bisections = GaugeMetricFamily("crcr_bisections", "Bisections retained, by state",
                                       labels=["backend", "state"])
        failing = GaugeMetricFamily("crcr_failing_tests", "Tests failing at the backend's tip: in their suite's "
                                    "run of the newest upstream commit built", labels=["backend"])
        for name, backend in backends.items():
            for each in STATES:
                states.add_metric([name, each], int(backend["state"] == each))
            for state, count in backend["commits"].items():
                commits.add_metric([name, state], count)
            latency.add_metric([name], *_histogram(backend["latencies"]))
            queue.add_metric([name], backend["queue_length"])
            if backend["oldest_queued_age"] is not None:
                oldest.add_metric([name], backend["oldest_queued_age"])
            for state, count in backend["bisections"].items():
                bisections.add_metric([name, state], count)
            failing.add_metric([name], backend["failing_tests"])
        yield from (states, commits, latency, queue, oldest, bisections, failing)
        yield from self._outbox(self.figures["outbox"])
        yield from self._units(self.figures["units"])
        yield from self._each_unit(self.figures["unit_figures"])
        yield from self._masters(self.figures["masters"])
        yield from self._stage_builds(self.figures["stage_builds"])
        yield from self._l3_readiness(self.figures["l3_readiness"])

    @staticmethod
    def _outbox(outbox: dict):
        yield GaugeMetricFamily("crcr_github_outbox_waiting", "GitHub statuses and check runs waiting to be sent",
                                value=outbox["waiting"])
        yield GaugeMetricFamily("crcr_github_outbox_given_up", "GitHub deliveries given up (refused for good) "
                                "within the last week", value=outbox["given_up"])
        if outbox["oldest_age"] is not None:
            yield GaugeMetricFamily("crcr_github_outbox_oldest_age_seconds", "Age of the oldest GitHub delivery "
                                    "waiting (absent when none waits)", value=outbox["oldest_age"])

    @staticmethod
    def _units(units: dict):
        connected = GaugeMetricFamily("crcr_units_connected", "Device units connected now", labels=["device"])
        declared = GaugeMetricFamily("crcr_units_declared", "Device units declared in the workers' files",
                                     labels=["device"])
        for device, counts in units.items():
            connected.add_metric([device], counts["connected"])
            declared.add_metric([device], counts["declared"])
        yield from (connected, declared)

    @staticmethod
    def _each_unit(units: list[dict]):
        """Each unit's gauges, from the Units page's figures (services/every_master/unit_figures.py)."""
        families = {
            "builds": GaugeMetricFamily("crcr_unit_builds", f"Builds the unit started (of any backend and kind: a "
                                        "fanned-out commit's build stage and suite children one each) in the last "
                                        f"{DAYS} days", labels=["unit"]),
            "infra_failures": GaugeMetricFamily("crcr_unit_infra_failures", f"Runs on the unit that hit the hardware "
                                                f"(infrastructure failures) in the last {DAYS} days", labels=["unit"]),
            "paused": GaugeMetricFamily("crcr_unit_paused", "1 while the unit is paused (taken out after hardware "
                                        "failures, or by hand), else 0", labels=["unit"]),
            "connected": GaugeMetricFamily("crcr_unit_connected", "1 while the unit is connected (to any master of "
                                           "the relay), else 0", labels=["unit"]),
        }
        for unit in units:
            for figure, family in families.items():
                family.add_metric([unit["name"]], int(unit[figure]))
        yield from families.values()

    @staticmethod
    def _masters(masters: list[dict]):
        up = GaugeMetricFamily("crcr_master_up", "1 while the master marks itself alive (within "
                               "CRCR_TAKEOVER_AFTER), 0 once silent or stopped (a stopped one is listed for a day)",
                               labels=["master"])
        last_active = GaugeMetricFamily("crcr_master_last_active_timestamp_seconds", "When the master last "
                                        "marked itself alive (Unix time)", labels=["master"])
        leader = GaugeMetricFamily("crcr_master_leader", "1 for the master holding the relay's lease (running its "
                                   "once-per-event duties), 0 for the others", labels=["master"])
        for master in masters:
            up.add_metric([master["name"]], int(master["state"] == "up"))
            last_active.add_metric([master["name"]], master["last_active"])
            leader.add_metric([master["name"]], int(master["leader"]))
        yield from (up, last_active, leader)


    @staticmethod
    def _stage_builds(builds: dict):
        """Each shared build's and build stage's figures over the health pages' default range (a ratio absent when
        no build gave what it is over)."""
        over = f"over the last {DEFAULT_RANGE}"
        count = GaugeMetricFamily("crcr_builds", f"Successful builds of the shared build or build stage {over}",
                                  labels=["build"])
        seconds = GaugeMetricFamily("crcr_build_seconds", f"Time from start to end of the successful builds of the "
                                    f"shared build or build stage {over}, nearest-rank quantiles (absent without "
                                    "one)", labels=["build", "quantile"])
        reused = GaugeMetricFamily("crcr_build_reused_ratio", f"Share of the successful builds {over} that reused "
                                   "an earlier build's wheel, of those that said how they were made", labels=["build"])
        hits = GaugeMetricFamily("crcr_compiler_cache_hit_ratio", f"Compiler cache hits over hits and misses, summed "
                                 f"over the successful builds {over} that gave the cache's figures", labels=["build"])
        for name, figures in builds.items():
            count.add_metric([name], figures["builds"])
            for quantile, key in (("0.5", "p50"), ("0.95", "p95")):
                if figures[key] is not None:
                    seconds.add_metric([name, quantile], figures[key])
            if figures["reused_rate"] is not None:
                reused.add_metric([name], figures["reused_rate"])
            if figures["cache"] is not None and figures["cache"]["hit_rate"] is not None:
                hits.add_metric([name], figures["cache"]["hit_rate"])
        yield from (count, seconds, reused, hits)

    @staticmethod
    def _l3_readiness(backends: dict):
        """Each criterion of PyTorch's HUD for L3 (health/readiness.py) per backend with relay jobs, over the
        promotion window (14d, with the time at L2) and the demotion window (7d): seconds for times, ratios for
        rates; a value absent when no job gave it."""
        labels = ["backend", "criterion", "window"]
        value = GaugeMetricFamily("crcr_l3_criterion_value", "The backend's figure of an L3 criterion of PyTorch's "
                                  "HUD, from the jobs of its builds as crcr reports them to PyTorch's relay (seconds, or a ratio)",
                                  labels=labels)
        target = GaugeMetricFamily("crcr_l3_criterion_target", "The HUD's target of the criterion (a bound the "
                                   "value must stay under, or reach: pass_rate, time_at_l2)", labels=labels)
        passing = GaugeMetricFamily("crcr_l3_criterion_passing", "1 while the backend meets the criterion over "
                                    "the window, else 0", labels=labels)
        states = GaugeMetricFamily("crcr_l3_readiness", "The backend's L3 readiness, 1 for the state it is in: "
                                   "ready, not_ready, at_risk (a demotion-window criterion fails), holds (an L3 "
                                   "backend within every target)", labels=["backend", "state"])
        since = GaugeMetricFamily("crcr_l3_ready_since_timestamp_seconds", "Since when the backend meets every "
                                  "promotion criterion (Unix time; absent unless ready)", labels=["backend"])
        for name, answer in backends.items():
            for window, days in (("promotion", PROMOTION_DAYS), ("demotion", DEMOTION_DAYS)):
                for criterion in answer[window]:
                    each = [name, criterion["name"], f"{days}d"]
                    if criterion["value"] is not None:
                        value.add_metric(each, criterion["value"])
                    target.add_metric(each, criterion["target"])
                    passing.add_metric(each, int(criterion["passes"]))
            for state in JUDGED_STATES:
                states.add_metric([name, state], int(answer["state"] == state))
            if answer["ready_since"] is not None:
                since.add_metric([name], answer["ready_since"])
        yield from (value, target, passing, states, since)


def _histogram(latencies: list[int]) -> tuple[list[tuple[str, int]], int]:
    """Cumulative buckets (le inclusive) and the sum, as HistogramMetricFamily.add_metric takes them."""
    buckets = [(str(float(le)), sum(1 for s in latencies if s <= le)) for le in LATENCY_BUCKETS]
    return buckets + [("+Inf", len(latencies))], sum(latencies)
