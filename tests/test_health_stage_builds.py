"""The figures of the shared builds and build stages (crcr/health/stage_builds.py) from hand-built rows of their
builds, with exact numbers: no database, no master (tests/test_health_service.py reads the rows from Buildbot's)."""

from __future__ import annotations

import pytest

from crcr.health.stage_builds import (
    BUILD_STAGE,
    SHARED_BUILD,
    Stage,
    every_stage,
    made_at_commit,
    made_text,
    stage_figures,
    stages_of,
)
from crcr.health.summary import BackendInfo
from crcr.names import build_child_name, shared_builder_name
from crcr.store.buildbot_tables import StageBuildRow

TORCH = Stage("torch-cpu", SHARED_BUILD, shared_builder_name("torch-cpu"))
FULL = {"how": "full", "why": "setup.py changed"}
REUSED = {"how": "reused", "from": {"commit": "a1" * 20, "build": 7}, "changed": 2}


def built(took: int, made: object = None, cache: object = None, builder: str = TORCH.builder) -> StageBuildRow:
    return StageBuildRow(builder, 1000, 1000 + took, made, cache)


def ccache(hits: object, misses: object, kind: object = "ccache") -> dict:
    return {"kind": kind, "hits": hits, "misses": misses}


def figures(*builds: StageBuildRow) -> dict:
    return stage_figures([TORCH], list(builds))[0]


def test_a_backend_has_its_build_stage_then_the_shared_builds_it_uses_and_the_relay_each_shared_build_once():
    staged = BackendInfo("spyre", "L2", "spyre", "", uses=("torch-cpu", "triton"), build_stage=True)
    plain = BackendInfo("npu", "L1", "npu", "", uses=("torch-cpu",))

    assert stages_of(staged) == [Stage("spyre / build stage", BUILD_STAGE, build_child_name("spyre")),
                                 TORCH, Stage("triton", SHARED_BUILD, shared_builder_name("triton"))]
    assert stages_of(BackendInfo("bare", "L1", "cpu", "")) == []
    assert [s.name for s in every_stage([staged, plain])] == ["torch-cpu", "triton", "spyre / build stage"]


def test_time_is_the_nearest_rank_p50_and_p95_of_start_to_end_and_reuse_the_share_of_the_builds_that_said():
    found = figures(built(1440, FULL), built(1860, REUSED), built(1500, REUSED), built(1200, FULL), built(600))

    assert (found["builds"], found["p50"], found["p95"]) == (5, 1440, 1860)
    # The build that said nothing of how it was made is in the builds and their times, not in the share.
    assert (found["told"], found["reused"], found["reused_rate"]) == (4, 2, 0.5)


def test_the_cache_hit_rate_sums_the_hits_and_misses_of_the_builds_that_gave_them():
    found = figures(built(60, FULL, ccache(90, 10)), built(60, REUSED), built(60, FULL, ccache(10, 90)))

    assert found["cache"] == {"kind": "ccache", "builds": 2, "hits": 100, "misses": 100, "hit_rate": 0.5}


def test_a_cache_that_changed_kind_in_the_range_names_both():
    found = figures(built(60, FULL, ccache(3, 1)), built(60, FULL, ccache(1, 3, kind="sccache")))

    assert (found["cache"]["kind"], found["cache"]["hit_rate"]) == ("ccache, sccache", 0.5)


def test_no_build_gives_no_figure_rather_than_a_division_by_zero():
    assert figures() == {"name": "torch-cpu", "kind": SHARED_BUILD, "builds": 0, "p50": None, "p95": None,
                         "told": 0, "reused": 0, "reused_rate": None, "cache": None}


def test_a_cache_that_compiled_nothing_has_counts_but_no_hit_rate():
    assert figures(built(60, REUSED, ccache(0, 0)))["cache"] == {"kind": "ccache", "builds": 1, "hits": 0,
                                                                 "misses": 0, "hit_rate": None}


@pytest.mark.parametrize("made", [{"how": "partly"}, {"from": {}}, "reused", ["full"], None])
def test_a_build_saying_how_it_was_made_unreadably_counts_as_saying_nothing(made):
    assert (figures(built(60, made))["told"], figures(built(60, made))["builds"]) == (0, 1)


@pytest.mark.parametrize("cache", [ccache(-1, 3), ccache(True, 3), ccache("9", 3), ccache(1, None), ccache(1, 2, 3),
                                   {"hits": 1, "misses": 2}, 42])
def test_cache_figures_that_cannot_be_read_are_left_out(cache):
    assert figures(built(60, FULL, cache), built(60, FULL, ccache(1, 1)))["cache"]["builds"] == 1


def test_each_stage_gets_its_own_builders_builds():
    stage = Stage("spyre / build stage", BUILD_STAGE, build_child_name("spyre"))

    found = stage_figures([TORCH, stage], [built(100), built(300, builder=stage.builder), built(500)])

    assert [(f["name"], f["builds"], f["p95"]) for f in found] == [("torch-cpu", 2, 500),
                                                                   ("spyre / build stage", 1, 300)]


def test_a_commit_says_how_each_of_its_builds_made_what_its_suites_ran_on():
    shared, stage = TORCH, Stage("spyre / build stage", BUILD_STAGE, build_child_name("spyre"))
    reused = {"how": "reused", "from": {"commit": "3ff80814" + "0" * 32, "build": 212, "files": ["torch-2.6.whl"]},
              "changed": 3}
    builds = [built(7000, {"how": "full", "why": "changes aten/x.cpp"}),  # an earlier build of the commit
              built(9, reused, ccache(0, 0)), built(600, builder=stage.builder)]

    assert made_at_commit([shared, stage], builds) == [
        {"name": "torch-cpu", "kind": SHARED_BUILD, "seconds": 9,
         "made": "reused torch-2.6.whl of 3ff80814 + 3 changed files",
         "cache": {"kind": "ccache", "hits": 0, "misses": 0}},
        {"name": "spyre / build stage", "kind": BUILD_STAGE, "seconds": 600, "made": None, "cache": None}]
    assert made_text({"how": "full", "why": "deletes torch/_old.py, since 3ff80814 (build 212)"}) == \
        "built in full: deletes torch/_old.py, since 3ff80814 (build 212)"
