"""What a backend's pytest suites select, read from the files its backend file names (skip lists, torch-spyre's
test-suite configs) as the backend files load: each suite's spec for the selection plugin (shipped/crcr_selection.py),
or the ConfigError that leaves the backend out naming the field and the file."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from crcr.config.backend import Backend
from crcr.config.errors import ConfigError, shown
from crcr.config.paths import display_path
from crcr.config.readfiles import SKIP_LIST_LIMIT, read_text, refuse_outside
from crcr.config.spyre_config import load_test_suite_config, selection_rules
from crcr.config.suite import Suite


def read_skip_list(path: Path) -> list[str]:
    """Node ids, one per line, or JSON lines with a `nodeid` field (Ascend's pr_skip_list.jsonl); '#' comments."""
    where = display_path(path)
    text = read_text(path, SKIP_LIST_LIMIT)
    node_ids = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                node_id = json.loads(line).get("nodeid")
            except ValueError as e:
                raise ConfigError(f"{where}: line {number}: not valid JSON ({e.msg})") from None
            if not isinstance(node_id, str) or "::" not in node_id:
                raise ConfigError(f"{where}: line {number}: a JSON line needs a 'nodeid' such as test/test_a.py::TestA::test_b")
        elif "::" in line and " " not in line:
            node_id = line
        else:
            raise ConfigError(f"{where}: line {number}: not a pytest node id (test/test_a.py::TestA::test_b): {shown(line)}")
        node_ids.append(node_id)
    return node_ids


def selection_spec(backend: Backend, suite: Suite, backends_dir: Path) -> dict:
    """The plugin's JSON spec; raises ConfigError naming the backend file's field and the file read."""
    selection = suite.pytest
    spec: dict = {"device": backend.device, "skip": [], "files": {}}
    field = f"suites.{[s.name for s in backend.suites].index(suite.name)}.pytest"
    where = display_path(backends_dir / f"{backend.name}.yaml")
    if selection.skip_list:
        with _named_in(f"{where}: {field}.skip_list", backends_dir, selection.skip_list) as path:
            spec["skip"] = [{"nodeid": node_id, "reason": selection.skip_list} for node_id in read_skip_list(path)]
    if selection.torch_spyre:
        with _named_in(f"{where}: {field}.torch_spyre", backends_dir, selection.torch_spyre) as path:
            spec.update(selection_rules(load_test_suite_config(path)))
    return spec


@contextmanager
def _named_in(field: str, backends_dir: Path, name: str):
    """The file a backend names, inside the backends folder (a link leading out is refused unread);
    its problems start with the backend file and field that name it."""
    path = backends_dir / name
    try:
        refuse_outside(path, backends_dir)
        if not path.exists():
            raise ConfigError(f"{display_path(path)} does not exist")
        yield path
    except ConfigError as e:
        raise ConfigError("\n".join(f"{field}: {line}" for line in str(e).splitlines())) from None
