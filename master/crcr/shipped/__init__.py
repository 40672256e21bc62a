"""What the relay ships to hosts and workers, run there apart from crcr (hosts never install the relay): the host
tool crcr_host.py (`crcr-host up`, served at /plugins/crcr/crcr-host, run here as `crcr host`), the pytest plugins
crcr_selection.py and crcr_order.py (shipped into each suite's build folder), fetch_artifacts.py (a suite's child
fetches the build stage's artifacts with it), crcr_compiler_cache.py (a build's compiler cache on its host) and
crcr_wheel.py (a shared build reusing an earlier build's wheel patches it with the changed Python files, or fetches
the commit's nightly wheel). Each imports the standard library only, the plugins pytest too (tests/test_layers.py):
nothing of crcr's."""

from __future__ import annotations

from pathlib import Path

HOST_TOOL = Path(__file__).with_name("crcr_host.py")
SELECTION_PLUGIN = Path(__file__).with_name("crcr_selection.py")
ORDER_PLUGIN = Path(__file__).with_name("crcr_order.py")
FETCH_SCRIPT = Path(__file__).with_name("fetch_artifacts.py")
COMPILER_CACHE_TOOL = Path(__file__).with_name("crcr_compiler_cache.py")
WHEEL_TOOL = Path(__file__).with_name("crcr_wheel.py")
