"""The package's folders are its layers: the file models, the test selection, the bisection planner and the health
figures run without Buildbot."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import crcr

PACKAGE = Path(crcr.__file__).parent
LAYERS = ["config", "suites", "bisection", "health", "buildmaster", "github", "pytorch_relay", "cli", "store", "shipped"]
# Buildbot's own rooms.
BUILDMASTER_ROOMS = ["util", "auth", "changes", "schedulers", "steps", "process", "reporters", "services", "www"]
PURE_LAYERS = ["config", "suites", "bisection", "health", "shipped"]  # testable and usable without a master


def buildbot_or_twisted_loaded_by(modules: list[str]) -> list[str]:
    """Which of Buildbot and Twisted importing `modules` loads, in a fresh interpreter (this one has Buildbot loaded
    by other tests already)."""
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'buildbot', 'twisted'})))\n"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_pure_layers_import_neither_buildbot_nor_twisted(layer):
    modules = sorted(f"crcr.{layer}.{p.stem}" for p in (PACKAGE / layer).glob("*.py") if p.stem != "__init__")
    assert modules, f"crcr.{layer} has no modules"
    loaded = buildbot_or_twisted_loaded_by(modules)
    assert loaded == [], f"crcr.{layer} pulls in {loaded}"


def test_the_crcr_command_loads_neither_buildbot_nor_twisted():
    """Every crcr command starts by loading its parser's modules: Buildbot and Twisted cost it a third of its start."""
    assert buildbot_or_twisted_loaded_by(["crcr.cli.main"]) == []


def test_every_module_lives_in_a_layer():
    top_level = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "names.py"))
    assert top_level == [], f"modules outside the layer folders {LAYERS}: {top_level}"
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS)


def test_the_buildmaster_keeps_each_thing_in_buildbots_room_for_it():
    """buildmaster/ holds the BuildmasterConfig, Buildbot's own rooms (changes, schedulers, process, steps,
    services, auth, www) and the build graph's, no loose module: a Buildbot engineer finds each piece where
    Buildbot keeps its kind."""
    buildmaster = PACKAGE / "buildmaster"
    assert sorted(p.name for p in buildmaster.glob("*.py")) == ["__init__.py", "masterconfig.py"]
    rooms = sorted(p.name for p in buildmaster.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert rooms == sorted(BUILDMASTER_ROOMS)
    assert all(any((buildmaster / room).rglob("[!_]*.py")) for room in rooms)


def test_github_reads_the_relays_state_from_the_store_not_from_the_buildmaster_services():
    """What the reporters post depends on state every master shares (the store), never on a service's memory: the
    reporters may run on another master than the service that ended a build."""
    importing = []
    for path in sorted((PACKAGE / "github").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            importing += [f"{path.name}: {name}" for name in names if name.startswith("crcr.buildmaster")]
    assert importing == []
