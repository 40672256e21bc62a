"""The build plan (plan/builds.py): the builders each backend file needs, as rows, in the style of WebKit's tests of
its generated configuration: the rows expected of each backend file shipped in backends/, then each case that
changes them (fan-out, a build stage, shared builds). The consumers (the builders, Triggerables, stale watch, Authz,
relay's worker) loop over these rows: tests/test_generated_config.py checks that they take the same plan."""

from __future__ import annotations

import shutil

import pytest

from configfiles import make_dirs, settings_for, write_backend, write_file, write_worker
from crcr.config.loader import load_relay_config
from crcr.config.paths import REPO_ROOT
from crcr.plan.builds import Holds, Role, fans_out, plan_builders

TWO_SUITES = [{"name": "smoke", "command": "true"}, {"name": "ops", "command": "true"}]
THE_BACKENDS, ITS_BUILD_STAGES, THE_SHARED_BUILDS = "the backend's", "its build stage's", "the shared build's"


def rows(plan) -> list[tuple]:
    """Each row as (name, role, backends, device, trigger, timeout, whose timeout, holds, stopped by, shown under)."""
    return [(r.name, r.role, r.backends, r.device, r.trigger, r.timeout, r.timeout_of, r.holds, r.stopped_by,
             r.shown_under) for r in plan]


def plan_of(dirs):
    return plan_builders(load_relay_config(settings_for(dirs)))


# The backend files shipped in backends/, on the demo's host and on a lab with Spyre cards and a CPU host.


@pytest.fixture
def shipped(tmp_path):
    """backends/ as shipped; workers/ as shipped, with a Spyre lab (four cards on one host) and a CPU host."""
    dirs = make_dirs(tmp_path)
    shutil.rmtree(dirs.backends)
    shutil.copytree(REPO_ROOT / "backends", dirs.backends)
    shutil.copy(REPO_ROOT / "workers" / "demo-local.yaml", dirs.workers)
    write_worker(dirs.workers, "lab-spyre", devices={"spyre": 4})
    write_worker(dirs.workers, "lab-cpu", devices={"cpu": 2})
    return dirs


def test_the_demos_plan_a_parent_its_suites_and_its_build_stage(shipped):
    """backends/demo.yaml: a build stage, so its suites fan out on the demo host's two units."""
    plan = [row for row in plan_of(shipped) if row.backends == ("demo",)]

    assert rows(plan) == [
        ("demo", Role.PARENT, ("demo",), "demo", None, None, THE_BACKENDS, Holds.ITS_OWN, ("demo",), ()),
        ("demo (suites)", Role.SUITES, ("demo",), "demo", "suites-demo", 600, THE_BACKENDS, Holds.ITS_PARENTS,
         ("demo",), ("demo / *",)),
        ("demo (build)", Role.BUILD_STAGE, ("demo",), "demo", "build-demo", 7200, ITS_BUILD_STAGES,
         Holds.ITS_PARENTS, ("demo",), ("demo / build stage",)),
    ]
    assert [(row.tags, row.properties) for row in plan] == [
        (("demo", "L1"), {"crcr_backend": "demo", "crcr_level": "L1"}),
        (("demo", "crcr-child"), {"crcr_backend": "demo"}),  # its children link their failures to demo's pages
        (("demo", "crcr-child"), {}),
    ]
    assert [row.description for row in plan] == [
        "Demo backend (runs the demo upstream's own tests on the local worker). Level L1, device demo; "
        "maintainers: @octocat.",
        "The suites of demo's builds, each a child build, on a unit of demo.",
        "The build stage of demo's builds, on a unit of demo.",
    ]
    assert [row.on_relay_worker for row in plan] == [True, False, False]


def test_spyres_plan_the_shared_cpu_torch_its_build_on_cpu_and_suites_on_cards(shipped):
    """backends/spyre.yaml in torch-spyre's shape: the shared torch-cpu build, its own build on a CPU unit, its
    suites on cards, one of them on two cards of one host."""
    plan = plan_of(shipped)

    assert rows(plan[3:]) == [
        ("spyre", Role.PARENT, ("spyre",), "spyre", None, None, THE_BACKENDS, Holds.ITS_OWN, ("spyre",), ()),
        ("spyre (suites)", Role.SUITES, ("spyre",), "spyre", "suites-spyre", 10800, THE_BACKENDS,
         Holds.ITS_PARENTS, ("spyre",), ("spyre / *",)),
        ("spyre (build)", Role.BUILD_STAGE, ("spyre",), "cpu", "build-spyre", 3600, ITS_BUILD_STAGES,
         Holds.ITS_PARENTS, ("spyre",), ("spyre / build stage",)),
        # Its users' maintainers have no rule for it: the relay's admins stop it.
        ("torch-cpu (shared build)", Role.SHARED_BUILD, ("spyre",), "cpu", "shared-torch-cpu", 7200,
         THE_SHARED_BUILDS, Holds.ITS_USERS, (), ()),
    ]
    suites = plan[4]
    assert suites.wide_suites == (("binary-ufuncs", 2),)
    assert suites.hosts == (tuple(f"lab-spyre-spyre-{i}" for i in range(4)),), "one host, its four cards"
    assert plan[6].description == "The shared build torch-cpu, made once per commit for spyre, on a unit of cpu."
    assert [row.tags for row in plan[3:]] == [
        ("spyre", "L2"), ("spyre", "crcr-child"), ("cpu", "crcr-child"), ("cpu", "crcr-child")]


def test_as_shipped_spyre_has_no_host_and_no_row(shipped):
    (shipped.workers / "lab-spyre.yaml").unlink()

    assert [row.name for row in plan_of(shipped)] == ["demo", "demo (suites)", "demo (build)"]


# What changes the rows.


@pytest.fixture
def dirs(tmp_path):
    return make_dirs(tmp_path)


def test_fan_out_left_out_fans_out_several_suites_where_several_units_of_the_device_build_at_once(dirs):
    write_backend(dirs.backends, "wide", suites=TWO_SUITES)
    write_backend(dirs.backends, "single", suites=TWO_SUITES[:1])
    write_backend(dirs.backends, "serial", suites=TWO_SUITES, fan_out=False)
    write_backend(dirs.backends, "forced", suites=TWO_SUITES[:1], device="lone", fan_out=True)
    write_backend(dirs.backends, "lonely", device="lone", suites=TWO_SUITES)
    write_backend(dirs.backends, "capped", device="duo", suites=TWO_SUITES)
    write_backend(dirs.backends, "spread", device="one", suites=TWO_SUITES)
    write_worker(dirs.workers, "lab-1", devices={"demo": 2, "lone": 1, "one": 1})
    write_worker(dirs.workers, "lab-2", devices={"one": 1, "duo": 2}, max_builds=1)
    relay = load_relay_config(settings_for(dirs))

    assert {b.name: fans_out(relay, b) for b in relay.backends} == {
        "capped": False,  # two units, on a host that takes one build at a time
        "forced": True,  # as its file says, on one unit and with one suite
        "lonely": False,  # one unit: its suites run one after another in any case
        "serial": False,  # as its file says
        "single": False,  # one suite gains nothing from a child build, and its commits may build at once
        "spread": True,  # one unit on each of two hosts
        "wide": True,
    }
    assert {row.name: row.role for row in plan_builders(relay)} == {
        "capped": Role.SERIAL, "forced": Role.PARENT, "forced (suites)": Role.SUITES, "lonely": Role.SERIAL,
        "serial": Role.SERIAL, "single": Role.SERIAL, "spread": Role.PARENT, "spread (suites)": Role.SUITES,
        "wide": Role.PARENT, "wide (suites)": Role.SUITES}


def test_a_serial_backend_is_one_row_on_its_units_held_to_its_timeout(dirs):
    write_backend(dirs.backends, "alpha", device="alpha", level="L3", timeout=7200, suites=TWO_SUITES, fan_out=False)
    write_worker(dirs.workers, "lab", devices={"alpha": 3})

    (row,) = plan_of(dirs)

    assert rows([row]) == [
        ("alpha", Role.SERIAL, ("alpha",), "alpha", None, 7200, THE_BACKENDS, Holds.ITS_OWN, ("alpha",), ())]
    assert (row.tags, row.on_relay_worker, row.is_backends_own) == (("alpha", "L3"), False, True)


@pytest.mark.parametrize("needs", [
    {"suites": [{"name": "nn", "pytest": {"files": ["test/nn"]}, "shards": 2}]},
    {"suites": [{"name": "cards", "command": "true", "units": 2}]},
    {"build": {"steps": ["make"], "artifacts": ["dist/*"]}},
], ids=["shards", "several units", "a build stage"])
def test_what_needs_child_builds_fans_out_on_one_suite_too(dirs, needs):
    write_backend(dirs.backends, "alpha", device="alpha", **needs)
    write_worker(dirs.workers, "lab", devices={"alpha": 2})

    assert [row.role for row in plan_of(dirs)][:2] == [Role.PARENT, Role.SUITES]


def test_a_build_stage_on_its_own_device_is_held_to_its_own_timeout(dirs):
    write_backend(dirs.backends, "alpha", device="alpha", timeout=3600,
                  build={"device": "cpu", "steps": ["make"], "artifacts": ["dist/*"], "timeout": 1200})
    write_worker(dirs.workers, "lab", devices={"alpha": 1, "cpu": 1})

    parent, suites, build = plan_of(dirs)

    assert (parent.timeout, suites.timeout) == (None, 3600), "the parent only waits for its children"
    assert rows([build]) == [("alpha (build)", Role.BUILD_STAGE, ("alpha",), "cpu", "build-alpha", 1200,
                              ITS_BUILD_STAGES, Holds.ITS_PARENTS, ("alpha",), ("alpha / build stage",))]


def test_a_shared_build_used_by_two_backends_is_one_row_for_both_after_theirs(dirs):
    write_file(dirs.backends / "builds" / "torch-cpu.yaml", "steps: [make]\nartifacts: [dist/*]\ntimeout: 900\n")
    write_file(dirs.backends / "builds" / "unused.yaml", "steps: [make]\nartifacts: [dist/*]\n")
    write_backend(dirs.backends, "alpha", device="alpha", uses=["torch-cpu"])
    write_backend(dirs.backends, "beta", device="beta", uses=["torch-cpu"])
    write_backend(dirs.backends, "gamma", device="gamma", uses=["torch-cpu"])  # no host: inactive
    write_worker(dirs.workers, "lab", devices={"alpha": 1, "beta": 1, "cpu": 1})

    plan = plan_of(dirs)

    assert [row.name for row in plan] == [
        "alpha", "alpha (suites)", "beta", "beta (suites)", "torch-cpu (shared build)"]
    assert rows(plan[-1:]) == [("torch-cpu (shared build)", Role.SHARED_BUILD, ("alpha", "beta"), "cpu",
                                "shared-torch-cpu", 900, THE_SHARED_BUILDS, Holds.ITS_USERS, (), ())]
    assert plan[-1].description == (
        "The shared build torch-cpu, made once per commit for alpha, beta, on a unit of cpu.")


def test_no_parent_no_row_on_the_relays_worker(dirs):
    write_backend(dirs.backends, "alpha", device="alpha")
    write_worker(dirs.workers, "lab", devices={"alpha": 2})

    assert [(row.role, row.on_relay_worker) for row in plan_of(dirs)] == [(Role.SERIAL, False)]


def test_wide_suites_name_each_hosts_units_of_the_device_only_when_a_suite_is_wide(dirs):
    write_backend(dirs.backends, "wide", device="duo", suites=[{"name": "cards", "command": "true", "units": 2}])
    write_backend(dirs.backends, "narrow", device="duo", suites=TWO_SUITES)
    write_worker(dirs.workers, "twin", devices={"duo": 2, "cpu": 1})
    write_worker(dirs.workers, "lone", devices={"duo": 1})
    write_worker(dirs.workers, "other", devices={"cpu": 1})

    suites = {row.name: row for row in plan_of(dirs) if row.role is Role.SUITES}

    assert (suites["wide (suites)"].wide_suites, suites["wide (suites)"].hosts) == (
        (("cards", 2),), (("lone-duo-0",), ("twin-duo-0", "twin-duo-1")))
    assert (suites["narrow (suites)"].wide_suites, suites["narrow (suites)"].hosts) == ((), ())
