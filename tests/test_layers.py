"""The package's folders are its layers: the file models, the test selection, the bisection planner and the health
figures run without Buildbot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import crcr

PACKAGE = Path(crcr.__file__).parent
LAYERS = ["config", "suites", "bisection", "health", "buildmaster", "github", "cli", "store"]
PURE_LAYERS = ["config", "suites", "bisection", "health"]  # testable and usable without a master


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_pure_layers_import_neither_buildbot_nor_twisted(layer):
    modules = sorted(f"crcr.{layer}.{p.stem}" for p in (PACKAGE / layer).glob("*.py") if p.stem != "__init__")
    assert modules, f"crcr.{layer} has no modules"
    # A fresh interpreter: this one has Buildbot loaded by other tests already.
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'buildbot', 'twisted'})))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == [], f"crcr.{layer} pulls in {loaded}"


def test_every_module_lives_in_a_layer():
    top_level = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "names.py"))
    assert top_level == [], f"modules outside the layer folders {LAYERS}: {top_level}"
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS)
