"""The figures of the builds that make what a backend's suites run: the shared builds it uses (backends/builds/) and
its build stage (`build:`), each made once per commit by a build child (docs/build-graph.md). Per such build, over the
range: its successful builds, their time from start to end (p50, p95), the share of them that reused an earlier
build's wheel, and the compiler cache's hit rate, from what each build child says of itself in its two properties
(names.BUILD_MADE_PROPERTY, COMPILER_CACHE_PROPERTY). A build that says nothing, or something unreadable, counts in
the builds and their times but in neither share."""

from __future__ import annotations

from dataclasses import dataclass

from crcr.health.summary import BackendInfo
from crcr.names import build_child_name, shared_builder_name
from crcr.store.buildbot_tables import StageBuildRow
from crcr.store.latency import nearest_rank

SHARED_BUILD, BUILD_STAGE = "shared build", "build stage"
HOW_MADE = ("full", "reused")


@dataclass(frozen=True)
class Stage:
    """A build that makes artifacts, named as the UI shows its builds: a shared build by its name ('torch-cpu'), a
    build stage by its build child's ('spyre / build stage'); `builder`: Buildbot's builder its builds are recorded
    under."""

    name: str
    kind: str  # SHARED_BUILD | BUILD_STAGE
    builder: str


def stages_of(info: BackendInfo) -> list[Stage]:
    """The backend's build stage, then the shared builds it uses, in its file's order."""
    stage = build_child_name(info.name)
    found = [Stage(stage, BUILD_STAGE, stage)] if info.build_stage else []
    return found + [Stage(name, SHARED_BUILD, shared_builder_name(name)) for name in info.uses]


def every_stage(infos: list[BackendInfo]) -> list[Stage]:
    """The shared builds any backend uses, each once, by name; then the build stages, in the backends' order."""
    stages = [stage for info in infos for stage in stages_of(info)]
    shared = {m.name: m for m in stages if m.kind == SHARED_BUILD}
    return [shared[name] for name in sorted(shared)] + [m for m in stages if m.kind == BUILD_STAGE]


def stage_figures(stages: list[Stage], builds: list[StageBuildRow]) -> list[dict]:
    """The figures of each of `stages`, in their order, from `builds`: the successful builds of their builders over
    the range."""
    by_builder: dict[str, list[StageBuildRow]] = {}
    for build in builds:
        by_builder.setdefault(build.builder, []).append(build)
    return [figures_of(stage, by_builder.get(stage.builder, [])) for stage in stages]


def figures_of(stage: Stage, builds: list[StageBuildRow]) -> dict:
    times = sorted(build.complete_at - build.started_at for build in builds)
    told = [how for build in builds if (how := how_made(build.made)) is not None]
    reused = told.count("reused")
    return {
        "name": stage.name,
        "kind": stage.kind,
        "builds": len(builds),
        "p50": nearest_rank(times, 50) if times else None,
        "p95": nearest_rank(times, 95) if times else None,
        "told": len(told),  # the builds that said how they were made: what the share of reused is over
        "reused": reused,
        "reused_rate": reused / len(told) if told else None,
        "cache": cache_figures([counts for build in builds if (counts := cache_counts(build.cache)) is not None]),
    }


def how_made(value: object) -> str | None:
    """BUILD_MADE_PROPERTY's `how`; None when the build did not say, or said it unreadably."""
    how = value.get("how") if isinstance(value, dict) else None
    return how if how in HOW_MADE else None


def cache_counts(value: object) -> tuple[str, int, int] | None:
    """(kind, hits, misses) of COMPILER_CACHE_PROPERTY; None when absent or unreadable."""
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        return None
    hits, misses = value.get("hits"), value.get("misses")
    if not all(_count(n) for n in (hits, misses)):
        return None
    return value["kind"], hits, misses


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def cache_figures(counts: list[tuple[str, int, int]]) -> dict | None:
    """The compiler cache's figures over the builds that gave them: its kind (each kind, when it changed within the
    range), hits, misses and hit rate, the sum of the hits over the sum of hits and misses (None when no build
    compiled anything); None when no build gave figures."""
    if not counts:
        return None
    hits, misses = sum(h for _, h, _ in counts), sum(m for _, _, m in counts)
    return {"kind": ", ".join(sorted({kind for kind, _, _ in counts})), "builds": len(counts), "hits": hits,
            "misses": misses, "hit_rate": hits / (hits + misses) if hits + misses else None}


def made_at_commit(stages: list[Stage], builds: list[StageBuildRow]) -> list[dict]:
    """How each of `stages` made one commit's artifacts, from `builds` (its successful builds at the commit, oldest
    first): its newest build's time, how it was made (made_text; None when it did not say) and cache figures."""
    newest = {build.builder: build for build in builds}
    return [{"name": stage.name, "kind": stage.kind, "seconds": build.complete_at - build.started_at,
             "made": made_text(build.made) if how_made(build.made) else None,
             "cache": dict(zip(("kind", "hits", "misses"), counts)) if (counts := cache_counts(build.cache)) else None}
            for stage in stages if (build := newest.get(stage.builder))]


def made_text(made: dict) -> str:
    """How a build made its artifacts (BUILD_MADE_PROPERTY's value): 'reused torch-2.6.0-cp311-linux_x86_64.whl of
    3ff80814 + 3 changed files', or 'built in full: changes aten/..., outside reuse: paths, since 3ff80814 (build
    212)'."""
    if made["how"] != "reused":
        return f"built in full: {made.get('why', 'no reason given')}"
    changed = made.get("changed", 0)
    return (f"reused {', '.join(made['from'].get('files', [])) or 'the artifacts'} of {made['from']['commit'][:8]} "
            f"+ {changed} changed file{'s' if changed != 1 else ''}")


def cache_figures_text(figures: dict) -> str:
    """One build's compiler cache figures (COMPILER_CACHE_PROPERTY's value): 'ccache: 812 hits, 4 misses (99% hit
    rate)', as its `cache figures` step and `crcr status BACKEND SHA` say them."""
    hits, misses = figures["hits"], figures["misses"]
    rate = f" ({100 * hits // (hits + misses)}% hit rate)" if hits + misses else ""
    return f"{figures['kind']}: {hits} hit{'s' if hits != 1 else ''}, {misses} miss{'es' if misses != 1 else ''}{rate}"
