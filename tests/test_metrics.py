"""/metrics's text (crcr.buildmaster.www.metrics): RelayHealth.metrics()'s figures in Prometheus's text format,
parsed back with prometheus-client's own parser, number by number."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from crcr.buildmaster.www.metrics import LATENCY_BUCKETS, metrics_text
from crcr.health.readiness import readiness
from crcr.store.levels import LevelChange
from crcr.store.relay_jobs import JobRow

HOUR, DAY = 3600, 86400
NOW = 1_700_000_000


def l3_readiness() -> dict:
    """ok-alpha: 40 days at L2, a job every 3 hours for 20 days (160) queued 10 min and run an hour, each tenth of
    the last week's 56 (jobs 104 to 159) timed out (health/readiness.py's answer)."""
    jobs = [JobRow("ok-alpha", f"{n:040x}", "push", n, "ok-alpha / unit", 1, n, queued, queued + 600,
                   queued + 600 + HOUR, "timed_out" if n % 10 == 0 and queued > NOW - 7 * DAY else "success")
            for n, queued in enumerate(range(NOW - 20 * DAY, NOW, 3 * HOUR))]
    return {"ok-alpha": readiness("L2", [LevelChange("L2", NOW - 40 * DAY)], jobs, NOW)}

FIGURES = {
    "backends": {
        "ok-alpha": {
            "state": "known_failures",
            "commits": {"pending": 2, "success": 5, "failure": 1, "error": 0},
            "latencies": [240, 300, 1000, 2 * HOUR, 3 * 86400],
            "queue_length": 1,
            "oldest_queued_age": 95,
            "bisections": {"running": 0, "done": 2, "abandoned": 1},
            "failing_tests": 3,
        },
        "ok-beta": {
            "state": None,
            "commits": {"pending": 0, "success": 0, "failure": 0, "error": 0},
            "latencies": [],
            "queue_length": 0,
            "oldest_queued_age": None,
            "bisections": {"running": 0, "done": 0, "abandoned": 0},
            "failing_tests": 0,
        },
    },
    "outbox": {"waiting": 4, "given_up": 1, "oldest_age": 30},
    "units": {"alpha": {"connected": 1, "declared": 2}, "beta": {"connected": 0, "declared": 1}},
    "unit_figures": [  # as services/every_master/unit_figures.py gives them (fields /metrics leaves out omitted)
        {"name": "lab-alpha-0", "connected": True, "paused": False, "builds": 12, "infra_failures": 1},
        {"name": "lab-alpha-1", "connected": False, "paused": True, "builds": 3, "infra_failures": 3},
    ],
    "masters": [
        {"name": "lab:/srv/crcr-a", "state": "up", "last_active": 1_700_000_000, "leader": True,
         "leader_since": 1_699_990_000},
        {"name": "lab:/srv/crcr-b", "state": "silent", "last_active": 1_699_999_800, "leader": False,
         "leader_since": None},
        {"name": "old:/srv/crcr", "state": "stopped", "last_active": 1_699_950_000, "leader": False,
         "leader_since": None},
    ],
    "stage_builds": {  # as health/stage_builds.py gives them
        "torch-cpu": {"name": "torch-cpu", "kind": "shared build", "builds": 14, "p50": 1440, "p95": 1860,
                      "told": 14, "reused": 6, "reused_rate": 6 / 14,
                      "cache": {"kind": "ccache", "builds": 8, "hits": 920, "misses": 80, "hit_rate": 0.92}},
        "ok-alpha / build stage": {"name": "ok-alpha / build stage", "kind": "build stage", "builds": 2, "p50": 300,
                                   "p95": 420, "told": 0, "reused": 0, "reused_rate": None, "cache": None},
        "idle": {"name": "idle", "kind": "shared build", "builds": 0, "p50": None, "p95": None, "told": 0,
                 "reused": 0, "reused_rate": None, "cache": None},
    },
    "l3_readiness": l3_readiness(),
}


def samples(figures: dict) -> dict[tuple, float]:
    """{(sample name, sorted labels): value} of the text, and each family's type and help checked present."""
    found = {}
    for family in text_string_to_metric_families(metrics_text(figures).decode()):
        assert family.documentation, f"{family.name} has no help text"
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_each_backend_s_commits_by_state_queue_bisections_and_failing_tests():
    found = samples(FIGURES)
    for backend, figures in FIGURES["backends"].items():
        for state, count in figures["commits"].items():
            assert found[("crcr_commits", (("backend", backend), ("state", state)))] == count
        for state, count in figures["bisections"].items():
            assert found[("crcr_bisections", (("backend", backend), ("state", state)))] == count
        assert found[("crcr_queue_length", (("backend", backend),))] == figures["queue_length"]
        assert found[("crcr_failing_tests", (("backend", backend),))] == figures["failing_tests"]
    assert found[("crcr_oldest_queued_age_seconds", (("backend", "ok-alpha"),))] == 95


def test_each_backend_s_state_is_one_of_its_states_set_to_1():
    found = samples(FIGURES)

    def state(backend):
        return {s: found[("crcr_backend_state", (("backend", backend), ("state", s)))]
                for s in ("failing", "known_failures", "error", "passing")}

    assert state("ok-alpha") == {"failing": 0, "known_failures": 1, "error": 0, "passing": 0}
    assert set(state("ok-beta").values()) == {0}, "no verdict yet: no state"


def test_an_empty_queue_has_no_oldest_age():
    found = samples(FIGURES)
    assert ("crcr_oldest_queued_age_seconds", (("backend", "ok-beta"),)) not in found


def test_the_latency_histogram_counts_each_commit_in_its_buckets():
    found = samples(FIGURES)

    def bucket(backend, le):
        return found[("crcr_commit_verdict_latency_seconds_bucket", (("backend", backend), ("le", le)))]

    assert LATENCY_BUCKETS[0] == 300 and LATENCY_BUCKETS[-1] == 2 * 86400
    # 240 and 300 are within 5 min (le is inclusive); 1000 s within 30 min; 2 h within 2 h; 3 days only in +Inf.
    assert [bucket("ok-alpha", le) for le in ("300.0", "900.0", "1800.0", "7200.0", "172800.0", "+Inf")] == [
        2, 2, 3, 4, 4, 5]
    assert found[("crcr_commit_verdict_latency_seconds_count", (("backend", "ok-alpha"),))] == 5
    assert found[("crcr_commit_verdict_latency_seconds_sum", (("backend", "ok-alpha"),))] == sum(
        FIGURES["backends"]["ok-alpha"]["latencies"])
    assert bucket("ok-beta", "+Inf") == 0
    assert found[("crcr_commit_verdict_latency_seconds_count", (("backend", "ok-beta"),))] == 0


def test_the_github_outbox_and_the_units_by_device():
    found = samples(FIGURES)
    assert found[("crcr_github_outbox_waiting", ())] == 4
    assert found[("crcr_github_outbox_given_up", ())] == 1
    assert found[("crcr_github_outbox_oldest_age_seconds", ())] == 30
    assert [found[(f"crcr_units_{kind}", (("device", device),))]
            for device in ("alpha", "beta") for kind in ("connected", "declared")] == [1, 2, 0, 1]


def test_each_unit_s_builds_and_hardware_failures_of_the_week_and_whether_it_is_paused_or_connected():
    found = samples(FIGURES)

    def each(metric):
        return [found[(metric, (("unit", unit),))] for unit in ("lab-alpha-0", "lab-alpha-1")]

    assert each("crcr_unit_builds") == [12, 3]
    assert each("crcr_unit_infra_failures") == [1, 3]
    assert each("crcr_unit_paused") == [0, 1]
    assert each("crcr_unit_connected") == [1, 0]


def test_each_master_is_up_or_not_with_its_last_sign_of_life_and_the_one_that_leads():
    found = samples(FIGURES)

    def each(metric):
        return [found[(metric, (("master", master["name"]),))] for master in FIGURES["masters"]]

    assert each("crcr_master_up") == [1, 0, 0], "silent or stopped: not up"
    assert each("crcr_master_last_active_timestamp_seconds") == [1_700_000_000, 1_699_999_800, 1_699_950_000]
    assert each("crcr_master_leader") == [1, 0, 0]


def test_an_empty_outbox_has_no_oldest_age():
    found = samples({**FIGURES, "outbox": {"waiting": 0, "given_up": 0, "oldest_age": None}})
    assert ("crcr_github_outbox_oldest_age_seconds", ()) not in found
    assert found[("crcr_github_outbox_waiting", ())] == 0


def test_each_scrape_is_built_afresh():
    """No state carried between scrapes: a backend gone from the figures is gone from the text."""
    metrics_text(FIGURES)
    fewer = {**FIGURES, "backends": {"ok-beta": FIGURES["backends"]["ok-beta"]}, "l3_readiness": {}}
    assert not any(dict(labels).get("backend") == "ok-alpha" for _, labels in samples(fewer))


@pytest.mark.parametrize("name", ['we"ird\\name', "new\nline"])
def test_label_values_are_escaped(name):
    figures = {**FIGURES, "backends": {name: FIGURES["backends"]["ok-beta"]}}
    assert samples(figures)[("crcr_queue_length", (("backend", name),))] == 0


def test_each_shared_build_and_build_stage_s_time_reuse_and_cache_hit_rate():
    found = samples(FIGURES)

    def of(metric, build, **labels):
        return found.get((metric, tuple(sorted({"build": build, **labels}.items()))))

    assert [of("crcr_builds", build) for build in ("torch-cpu", "ok-alpha / build stage", "idle")] == [14, 2, 0]
    assert (of("crcr_build_seconds", "torch-cpu", quantile="0.5"),
            of("crcr_build_seconds", "torch-cpu", quantile="0.95")) == (1440, 1860)
    assert of("crcr_build_reused_ratio", "torch-cpu") == pytest.approx(6 / 14)
    assert of("crcr_compiler_cache_hit_ratio", "torch-cpu") == 0.92
    # What no build gave is absent, never a 0 that reads as a figure.
    assert of("crcr_build_reused_ratio", "ok-alpha / build stage") is None
    assert of("crcr_compiler_cache_hit_ratio", "ok-alpha / build stage") is None
    assert of("crcr_build_seconds", "idle", quantile="0.5") is None


def test_each_l3_criterion_of_a_backend_with_relay_jobs_beside_its_target_passing_or_not():
    found = samples(FIGURES)

    def of(metric, criterion, window):
        return found.get((metric, (("backend", "ok-alpha"), ("criterion", criterion), ("window", window))))

    assert of("crcr_l3_criterion_value", "average_queue", "14d") == 600
    assert of("crcr_l3_criterion_target", "average_queue", "14d") == 1800
    assert of("crcr_l3_criterion_value", "time_at_l2", "14d") == 40 * DAY
    assert of("crcr_l3_criterion_target", "time_at_l2", "14d") == 30 * DAY
    assert of("crcr_l3_criterion_value", "timeout_rate", "7d") == pytest.approx(5 / 56)
    assert [of("crcr_l3_criterion_passing", "timeout_rate", window) for window in ("14d", "7d")] == [0, 0]
    assert of("crcr_l3_criterion_passing", "pass_rate", "14d") == 1
    assert found[("crcr_l3_readiness", (("backend", "ok-alpha"), ("state", "not_ready")))] == 1
    assert found[("crcr_l3_readiness", (("backend", "ok-alpha"), ("state", "ready")))] == 0
    assert not any(dict(labels).get("backend") == "ok-beta" for name, labels in found if name.startswith("crcr_l3"))
