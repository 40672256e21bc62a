"""Unit tests of loading backends/*.yaml and workers/*.yaml: what a backend author sees when a file is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from configfiles import (
    BACKEND,
    DROP,
    WORKER,
    alias_bomb,
    backend_yaml,
    make_dirs,
    settings_for,
    worker_yaml,
    write_backend,
    write_file,
    write_worker,
    write_worker_password,
)
from crcr.config.backend import Backend
from crcr.config.errors import ConfigError
from crcr.config.loader import InfraRules, load_model, load_relay_config, require_worker_passwords
from crcr.config.paths import display_path
from crcr.config.selections import read_skip_list
from crcr.config.settings import REPO_ROOT, load_settings
from crcr.config.workers import Device, WorkerHost
from numericfields import boolean_paths, number_paths, with_value

FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "pytorch-oot"

NAME_RULE = "must be lowercase letters, digits and '-', starting with a letter or digit"
DEVICE_RULE = "must be lowercase letters, digits, '-' and '_', starting with a letter or digit"
BACKEND_KEYS = (
    "description, maintainers, mail, level, repo, pr_label, trusted_associations, device, branches, queue, schedule, "
    "report_to_pytorch, timeout, stale_after, setup, fan_out, build, uses, env, paths, ignore_paths, infra_failures, suites, "
    "disabled_platforms, quarantine, issues"
)
SMOKE = {"name": "smoke", "command": "true"}

# (file under the relay root, its text, the whole error message; {file} is the file's path).
BAD_FILES = [
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(timout=60),
        f"{{file}}: timout: unknown key (did you mean 'timeout'?); the known keys are {BACKEND_KEYS}",
        id="misspelt-key",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(paths=["/torch/csrc/**"]),
        "{file}: paths.0: must be relative to upstream's root (no leading '/'), e.g. 'torch/csrc/**' or '*.md' "
        "(got '/torch/csrc/**')",
        id="absolute-path-glob",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(colour="red"),
        f"{{file}}: colour: unknown key; the known keys are {BACKEND_KEYS}",
        id="unknown-key",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "retries": 2}]),
        "{file}: suites.0.retries: unknown key (did you mean 'reruns'?); the known keys are name, command, pytest, "
        "timeout, stall_timeout, mode, reruns, shards, units",
        id="unknown-suite-key",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "shards": 3}], fan_out=True),
        "{file}: suites.0: shards: 3 needs a pytest suite: the relay splits the tests pytest collects, which a "
        "command suite does not tell it",
        id="command-suite-in-shards",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": "ops", "pytest": {"files": ["test/test_ops.py"]}, "shards": 3, "units": 2}],
                     fan_out=False, uses=["torch-cpu"]),
        "{file}: fan_out: false keeps every suite in one build, and shared builds ('torch-cpu'), suites in shards "
        "('ops'), suites on several units ('ops') run as child builds: leave fan_out out, or set it true",
        id="children-kept-in-one-build",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(build={"steps": ["make wheel"], "artifacts": ["../dist/*.whl", "/tmp/x"]}),
        "{file}: build.artifacts: '../dist/*.whl', '/tmp/x': must be a glob relative to the upstream checkout "
        "(no '..', no leading '/')",
        id="artifact-out-of-the-checkout",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(build={"steps": ["make wheel"]}),
        "{file}: build.artifacts: required field is missing",
        id="build-without-artifacts",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(device=DROP),
        "{file}: device: required field is missing",
        id="missing-device",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(repo="torch-spyre"),
        "{file}: repo: must be a GitHub repository, <owner>/<name>, e.g. torch-spyre/torch-spyre (got 'torch-spyre')",
        id="repo-without-owner",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(repo="https://github.com/torch-spyre/torch-spyre"),
        "{file}: repo: must be a GitHub repository, <owner>/<name>, e.g. torch-spyre/torch-spyre "
        "(got 'https://github.com/torch-spyre/torch-spyre')",
        id="repo-as-url",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(trusted_associations=["OWNER", "member"]),
        "{file}: trusted_associations.1: should be one of GitHub's author associations: COLLABORATOR, CONTRIBUTOR, "
        "FIRST_TIMER, FIRST_TIME_CONTRIBUTOR, MANNEQUIN, MEMBER, NONE, OWNER (got 'member')",
        id="unknown-author-association",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(pr_label=""),
        "{file}: pr_label: must not be empty",
        id="empty-pr-label",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(pr_label="x" * 51),
        "{file}: pr_label: must be at most 50 characters (got 51 characters)",
        id="pr-label-above-githubs-limit",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(pr_label=" ciflow/oot/demo"),
        "{file}: pr_label: must be a GitHub label: no spaces at its ends, no line breaks (got ' ciflow/oot/demo')",
        id="pr-label-with-a-leading-space",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": "smoke"}]),
        "{file}: suites.0: give either command or pytest, not both or neither",
        id="missing-suite-command",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "pytest": {"files": ["test/test_ops.py"]}}]),
        "{file}: suites.0: give either command or pytest, not both or neither",
        id="suite-command-and-pytest",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": "ops", "pytest": {"files": ["test/test_ops.py", "../secrets/x.py"]}}]),
        "{file}: suites.0.pytest.files: '../secrets/x.py': must be a path or glob under test/, e.g. test/test_ops.py "
        "or test/nn/test_*.py",
        id="pytest-file-outside-test",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": "ops", "pytest": {"files": ["test/a.py"], "deselect": ["TestA::test_b"]}}]),
        "{file}: suites.0.pytest.deselect: 'TestA::test_b': must be a pytest node id such as "
        "test/test_ops.py::TestOps::test_add",
        id="pytest-bad-deselect",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": "ops", "pytest": {"keyword": "add"}}]),
        "{file}: suites.0.pytest: give files, a torch_spyre config, or both",
        id="pytest-nothing-to-run",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "mode": "advisory", "reruns": 5}]),
        "{file}: suites.0.mode: should be 'gating' or 'validate' (got 'advisory')\n"
        "{file}: suites.0.reruns: must be at most 3 (got 5)",
        id="suite-bad-mode-and-reruns",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(queue="oldest"),
        "{file}: queue: should be 'newest' or 'every' (got 'oldest')",
        id="queue-unknown-policy",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(queue=True),
        "{file}: queue: should be 'newest' or 'every' (got True)",
        id="queue-yes",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(level="L5"),
        "{file}: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L5')",
        id="level-L5",
    ),
    pytest.param(
        "backends/Spyre.yaml",
        backend_yaml(),
        f"{{file}}: file name: {NAME_RULE} (got 'Spyre')",
        id="uppercase-file-name",
    ),
    pytest.param(
        "backends/my_backend.yaml",
        backend_yaml(),
        f"{{file}}: file name: {NAME_RULE} (got 'my_backend')",
        id="underscore-file-name",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(device="Spyre GPU"),
        f"{{file}}: device: {DEVICE_RULE} (got 'Spyre GPU')",
        id="bad-device-name",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[]),
        "{file}: suites: must not be empty",
        id="empty-suites",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[SMOKE, {"name": "ops", "command": "true"}, {"name": "smoke", "command": "false"}]),
        "{file}: suites: duplicate suite names: 'smoke'",
        id="duplicate-suites",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "timeout": -5}]),
        "{file}: suites.0.timeout: should be greater than 0 (got -5)",
        id="negative-suite-timeout",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(timeout=0),
        "{file}: timeout: should be greater than 0 (got 0)",
        id="zero-timeout",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(timeout="1h"),
        "{file}: timeout: should be a whole number (got '1h')",
        id="timeout-with-unit",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "timeout": 1.5}]),
        "{file}: suites.0.timeout: should be a whole number (got 1.5)",
        id="fractional-timeout",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml() + "timeout: yes\n",
        "{file}: timeout: should be a whole number (got True)",
        id="yaml-boolean-timeout",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(stale_after=0),
        "{file}: stale_after: should be greater than 0 (got 0)",
        id="zero-stale-after",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(stale_after="6h"),
        "{file}: stale_after: should be a whole number (got '6h')",
        id="stale-after-with-unit",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(maintainers=["octocat", "not a login"]),
        "{file}: maintainers: not GitHub logins: 'not a login'",
        id="bad-maintainer-login",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(mail=["Spyre CI <spyre-ci@example.com>", "octocat"]),
        "{file}: mail: not e-mail addresses (as 'Name <name@example.com>' or name@example.com): 'octocat'",
        id="mail-not-an-address",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(maintainers="octocat"),
        "{file}: maintainers: should be a valid list (got 'octocat')",
        id="maintainers-not-a-list",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(branches=["main", "a b"]),
        "{file}: branches: not valid branch names: 'a b'",
        id="branch-with-space",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(branches=["x..y"]),
        "{file}: branches: not valid branch names: 'x..y'",
        id="branch-with-dot-dot",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(env={"CRCR_FOO": "1"}),
        "{file}: env: reserved names (the relay sets CRCR_* itself): 'CRCR_FOO'",
        id="env-CRCR_FOO",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(env={"MY-VAR": "1"}),
        "{file}: env: not valid variable names: 'MY-VAR'",
        id="env-bad-name",
    ),
    pytest.param(
        "backends/demo.yaml",
        "description: [unclosed\nlevel: L1\n",
        "{file}: not valid YAML: line 2, column 6: expected ',' or ']', but got ':' (while parsing a flow sequence)",
        id="yaml-syntax-error",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml() + "level: L2\n",
        f"{{file}}: not valid YAML: line {backend_yaml().count(chr(10)) + 1}, column 1: duplicate key 'level'",
        id="yaml-duplicate-key",
    ),
    pytest.param(
        "backends/demo.yaml",
        "- description: Test accelerator\n- level: L1\n",
        "{file}: expected a mapping of fields (key: value lines), found a list",
        id="top-level-list",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(name="other"),
        "{file}: name: unknown key (the file name 'demo' is the name)",
        id="name-key",
    ),
    pytest.param(
        "backends/demo.yml",
        backend_yaml(),
        "{file}: use the .yaml extension, .yml files are not read",
        id="yml-extension",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices=DROP),
        "{file}: devices: required field is missing",
        id="worker-without-devices",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={}),
        "{file}: devices: must not be empty",
        id="worker-empty-devices",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={"demo": 0}),
        "{file}: devices.demo: should be greater than 0 (got 0)",
        id="worker-device-count-0",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={"Demo": 1}),
        f"{{file}}: devices: invalid device names 'Demo': {DEVICE_RULE}",
        id="worker-bad-device-name",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(cpus=8),
        "{file}: cpus: unknown key; the known keys are devices, max_builds, admin, maintainers, build_env",
        id="worker-unknown-key",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(maintainers=["alice", "Lab admin <lab@example.com>"]),
        "{file}: maintainers: not GitHub logins: 'Lab admin <lab@example.com>'",
        id="worker-maintainer-not-a-login",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(max_builds=0),
        "{file}: max_builds: should be greater than 0 (got 0)",
        id="worker-max-builds-0",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(build_env="venvs/torch"),
        "{file}: build_env: must be 'worker' (the worker's own venv) or the path of a venv, which must be an "
        "absolute path of letters, digits, '.', '_', '-' and '/' (got 'venvs/torch')",
        id="worker-build-env-relative",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(build_env="/opt/torch\nExecStartPre=/bin/sh"),
        "{file}: build_env: must be 'worker' (the worker's own venv) or the path of a venv, which must be an "
        "absolute path of letters, digits, '.', '_', '-' and '/' (got '/opt/torch\\nExecStartPre=/bin/sh')",
        id="worker-build-env-newline",
    ),
    pytest.param(
        "workers/gpu host.yaml",
        worker_yaml(),
        "{file}: file name: must be letters, digits, '-' and '_', starting with a letter (got 'gpu host')",
        id="worker-file-name-with-space",
    ),
    pytest.param(
        "workers/4gpu.yaml",
        worker_yaml(),
        "{file}: file name: must be letters, digits, '-' and '_', starting with a letter (got '4gpu')",
        id="worker-file-name-starting-with-digit",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={"demo": 2}, max_builds=3),
        "{file}: max_builds: 3 is more than the host's 2 device units (each unit runs one build at a time)",
        id="worker-max-builds-above-units",
    ),
    pytest.param(
        f"workers/{'h' * 43}.yaml",
        worker_yaml(devices={"spyre": 4}),
        f"{{file}}: the worker name of a unit, '{'h' * 43}-spyre-0', is longer than Buildbot's 50 characters; "
        "use a shorter host or device name",
        id="worker-unit-name-too-long",
    ),
]

PYTEST_SUITE = {"name": "ops", "pytest": {"files": ["test/test_ops.py"]}}


def pytest_suite(**fields) -> list[dict]:
    return [{**PYTEST_SUITE, "pytest": {**PYTEST_SUITE["pytest"], **fields}}]


# Bounds of every number, text and list: (file, its text, the whole error message). Echoed values are cut short.
OUT_OF_BOUNDS = [
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(quarantine={"flakes": -1}),
        "{file}: quarantine.flakes: should be greater than or equal to 0 (got -1)",
        id="quarantine-flakes-negative",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(quarantine={"clean_runs": 0}),
        "{file}: quarantine.clean_runs: should be greater than or equal to 1 (got 0)",
        id="quarantine-clean-runs-0",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(timeout=10**400),
        "{file}: timeout: must be at most 604800 seconds (7 days) (got a number of 401 digits)",
        id="timeout-10**400",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml() + "timeout: 1" + "0" * 5000 + "\n",
        f"{{file}}: not valid YAML: line {backend_yaml().count(chr(10)) + 1}, column 10: a number of 5001 digits is too long "
        "to read",
        id="timeout-too-long-to-read",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(timeout=604801),
        "{file}: timeout: must be at most 604800 seconds (7 days) (got 604801)",
        id="timeout-over-7-days",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(stale_after=604801),
        "{file}: stale_after: must be at most 604800 seconds (7 days) (got 604801)",
        id="stale-after-over-7-days",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "timeout": 604801}]),
        "{file}: suites.0.timeout: must be at most 604800 seconds (7 days) (got 604801)",
        id="suite-timeout-over-7-days",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "stall_timeout": 604801}]),
        "{file}: suites.0.stall_timeout: must be at most 604800 seconds (7 days) (got 604801)",
        id="stall-timeout-over-7-days",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "timeout": 300, "stall_timeout": 600}]),
        "{file}: suites.0.stall_timeout: must be at most the suite's timeout of 300 seconds (got 600)",
        id="stall-timeout-above-suite-timeout",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(timeout=600, suites=[{**SMOKE, "timeout": 900}, {"name": "ops", "command": "true", "timeout": 700}]),
        "{file}: suites: 'smoke' (900) and 'ops' (700) have a timeout above the backend's timeout of 600 seconds, "
        "the whole build's budget",
        id="suite-timeouts-above-backend-timeout",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(description="d" * 301),
        "{file}: description: must be at most 300 characters (got 301 characters)",
        id="description-301-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(level="L" * 100_000),
        f"{{file}}: level: should be 'L1', 'L2', 'L3' or 'L4' (got {'L' * 60!r}... (100000 characters))",
        id="long-value-echoed-cut-short",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(maintainers=[f"user{i}" for i in range(51)]),
        "{file}: maintainers: must have at most 50 entries (got 51)",
        id="51-maintainers",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(maintainers=["octocat", "x" * 1000, "a b", "c d", "e f", "g h", "i j"]),
        f"{{file}}: maintainers: not GitHub logins: {'x' * 60!r}... (1000 characters), 'a b', 'c d', 'e f', 'g h' "
        "and 1 more",
        id="bad-logins-listed-cut-short",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(branches=[f"b{i}" for i in range(51)]),
        "{file}: branches: must have at most 50 entries (got 51)",
        id="51-branches",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(branches=["b" * 256]),
        "{file}: branches.0: must be at most 255 characters (got 256 characters)",
        id="branch-name-256-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(setup=["true"] * 101),
        "{file}: setup: must have at most 100 entries (got 101)",
        id="101-setup-commands",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(setup=["true", "x" * 10_001]),
        "{file}: setup.1: must be at most 10000 characters (got 10001 characters)",
        id="setup-command-10001-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(env={f"V{i}": "1" for i in range(101)}),
        "{file}: env: must have at most 100 entries (got 101)",
        id="101-env-variables",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(env={"BIG": "x" * 10_001}),
        "{file}: env.BIG: must be at most 10000 characters (got 10001 characters)",
        id="env-value-10001-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(env={"V" * 101: "1"}),
        f"{{file}}: env: names longer than 100 characters: {'V' * 60!r}... (101 characters)",
        id="env-name-101-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": f"s{i}", "command": "true"} for i in range(51)]),
        "{file}: suites: must have at most 50 entries (got 51)",
        id="51-suites",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "command": "x" * 10_001}]),
        "{file}: suites.0.command: must be at most 10000 characters (got 10001 characters)",
        id="suite-command-10001-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{**SMOKE, "name": "s" * 41}]),
        "{file}: suites.0.name: must be at most 40 characters (got 41 characters)",
        id="suite-name-41-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=pytest_suite(files=[f"test/test_{i}.py" for i in range(501)])),
        "{file}: suites.0.pytest.files: must have at most 500 entries (got 501)",
        id="501-test-files",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=pytest_suite(files=["test/" + "t" * 293 + ".py"])),
        "{file}: suites.0.pytest.files.0: must be at most 300 characters (got 301 characters)",
        id="test-path-301-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=pytest_suite(deselect=[f"test/test_ops.py::test_{i}" for i in range(201)])),
        "{file}: suites.0.pytest.deselect: must have at most 200 entries (got 201)",
        id="201-deselected-tests",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=pytest_suite(deselect=["test/test_ops.py::" + "t" * 983])),
        "{file}: suites.0.pytest.deselect.0: must be at most 1000 characters (got 1001 characters)",
        id="node-id-1001-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=pytest_suite(keyword="k" * 1001)),
        "{file}: suites.0.pytest.keyword: must be at most 1000 characters (got 1001 characters)",
        id="keyword-1001-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=pytest_suite(skip_list="s" * 301)),
        "{file}: suites.0.pytest.skip_list: must be at most 300 characters (got 301 characters)",
        id="skip-list-path-301-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": "ops", "pytest": {"torch_spyre": "s" * 301}}]),
        "{file}: suites.0.pytest.torch_spyre: must be at most 300 characters (got 301 characters)",
        id="torch-spyre-path-301-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(device="d" * 41),
        "{file}: device: must be at most 40 characters (got 41 characters)",
        id="device-name-41-characters",
    ),
    pytest.param(
        f"backends/{'b' * 41}.yaml",
        backend_yaml(),
        "{file}: file name: must be at most 40 characters (got 41 characters)",
        id="backend-name-41-characters",
    ),
    pytest.param(
        "backends/demo.yaml",
        backend_yaml(suites=[{"name": "ops", "pytest": {"files": ["test/test_ops.py"]}, "shards": 65}]),
        "{file}: suites.0.shards: must be at most 64 shards (got 65)",
        id="suite-65-shards",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={"npu": 100_000}),
        "{file}: devices.npu: must be at most 64 units (got 100000)",
        id="worker-100000-units",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={"npu": 10**400}),
        "{file}: devices.npu: must be at most 64 units (got a number of 401 digits)",
        id="worker-10**400-units",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={f"d{i}": 1 for i in range(17)}),
        "{file}: devices: must have at most 16 entries (got 17)",
        id="worker-17-device-kinds",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={"d" * 100: 0}),
        f"{{file}}: devices.{'d' * 60}...: should be greater than 0 (got 0)",
        id="worker-long-device-key-cut-short",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(devices={"d" * 41: 1}),
        f"{{file}}: devices: device names longer than 40 characters: {'d' * 41!r}",
        id="worker-device-name-41-characters",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(max_builds=10**400),
        "{file}: max_builds: must be at most 1024 (got a number of 401 digits)",
        id="worker-max-builds-10**400",
    ),
    pytest.param(
        "workers/gpu-host.yaml",
        worker_yaml(admin="a" * 301),
        "{file}: admin: must be at most 300 characters (got 301 characters)",
        id="worker-admin-301-characters",
    ),
]


@pytest.mark.parametrize("file_name, text, message", OUT_OF_BOUNDS)
def test_a_value_out_of_bounds_is_refused_naming_file_field_and_bound(tmp_path, file_name, text, message):
    test_bad_file_is_refused_naming_file_field_and_problem(tmp_path, file_name, text, message)


def test_the_bounds_leave_room_for_the_largest_real_selection(tmp_path):
    """Ascend's PR gate runs 128 upstream test files in one category; each of its categories fits one suite."""
    if not FIXTURES.is_dir():
        pytest.skip(f"the shared fixtures are not in {FIXTURES}")
    whitelist = yaml.safe_load((FIXTURES / "pr_test_whitelist.yml").read_text(encoding="utf-8"))
    suites = [{"name": name, "pytest": {"files": category["files"]}, "timeout": 14400}
              for name, category in whitelist["categories"].items()]
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "npu", device="npu", timeout=604800, suites=suites)

    (npu,) = load_relay_config(settings_for(dirs)).backends

    assert max(len(s.pytest.files) for s in npu.suites) == 128


# Each number of the backend and host files, found from their models (a backend file with a schedule holds them all).
NUMBERS = [
    (file_name, document, path)
    for file_name, model, document in (
        ("backends/demo.yaml", Backend, {**BACKEND, "schedule": {"follow": "nightly"},
                                          "build": {"steps": ["make"], "artifacts": ["dist/*"],
                                                    "compiler_cache": {"kind": "ccache", "max_size": "5G"},
                                                    "reuse": {"paths": ["torch/**.py"], "steps": ["make patch"]}},
                                          "infra_failures": {"tries": 2},
                                          "quarantine": {"flakes": 2, "days": 7, "clean_runs": 3}}),
        ("workers/gpu-host.yaml", WorkerHost, WORKER),
        ("workers/devices/demo.yaml", Device, {"infra_failures": {"tries": 2}}),
    )
    for path in number_paths(model, document)
]
NUMBER_IDS = [f"{file_name.split('/')[0]}:{'.'.join(map(str, path))}" for file_name, _, path in NUMBERS]


@pytest.mark.parametrize("not_a_number", [True, "3", 1.5], ids=repr)
@pytest.mark.parametrize("file_name, document, path", NUMBERS, ids=NUMBER_IDS)
def test_every_number_of_the_files_refuses_a_boolean_a_string_and_a_fraction(tmp_path, file_name, document, path,
                                                                            not_a_number):
    """YAML's `true` is no 1, nor "3" a 3: pydantic's lax mode would take both (`hour: true` was hour 1)."""
    text = yaml.safe_dump(with_value(document, path, not_a_number), sort_keys=False)
    field = ".".join(map(str, path))
    message = f"{{file}}: {field}: should be a whole number (got {not_a_number!r})"

    test_bad_file_is_refused_naming_file_field_and_problem(tmp_path, file_name, text, message)


# Each boolean of the backend and device files, found from their models (no host field is one yet).
INFRA_FAILURES = {"patterns": [{"pattern": "RAS::", "in_tests": True}], "stall": True}
BOOLEANS = [
    (file_name, document, path)
    for file_name, model, document in (
        ("backends/demo.yaml", Backend, {**BACKEND, "fan_out": True, "infra_failures": INFRA_FAILURES}),
        ("workers/gpu-host.yaml", WorkerHost, WORKER),
        ("workers/devices/demo.yaml", Device, {"infra_failures": INFRA_FAILURES}),
    )
    for path in boolean_paths(model, document)
]


@pytest.mark.parametrize("not_a_boolean", ["yes", "true", 1], ids=repr)
@pytest.mark.parametrize("file_name, document, path", BOOLEANS,
                         ids=[f"{f.split('/')[0]}:{'.'.join(map(str, p))}" for f, _, p in BOOLEANS])
def test_every_boolean_of_the_files_refuses_a_string_and_a_number(tmp_path, file_name, document, path, not_a_boolean):
    """`fan_out: "yes"` is a string, not true, as "3" is no 3 (pydantic's lax mode would take it)."""
    text = yaml.safe_dump(with_value(document, path, not_a_boolean), sort_keys=False)
    field = ".".join(map(str, path))
    message = f"{{file}}: {field}: should be true or false (got {not_a_boolean!r})"

    test_bad_file_is_refused_naming_file_field_and_problem(tmp_path, file_name, text, message)


@pytest.mark.parametrize("file_name, text, message", BAD_FILES)
def test_bad_file_is_refused_naming_file_field_and_problem(tmp_path, file_name, text, message):
    dirs = make_dirs(tmp_path)
    if file_name.startswith("workers/"):
        write_backend(dirs.backends, "demo")
    bad = write_file(tmp_path / file_name, text)

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value) == message.format(file=bad)


def test_every_bad_file_is_reported_in_one_error(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "good")
    level = write_backend(dirs.backends, "bad-level", level="L5")
    branches = write_backend(dirs.backends, "bad-branch", branches=["a b"])
    stray = write_file(dirs.backends / "stray.yml", backend_yaml())
    devices = write_worker(dirs.workers, "no-devices", devices=DROP)
    typo = write_worker(dirs.workers, "typo", admin=DROP, admn="me")
    write_worker(dirs.workers, "good-host")

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value).splitlines() == [
        f"{branches}: branches: not valid branch names: 'a b'",
        f"{level}: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L5')",
        f"{stray}: use the .yaml extension, .yml files are not read",
        f"{devices}: devices: required field is missing",
        f"{typo}: admin: required field is missing",
        f"{typo}: admn: unknown key (did you mean 'admin'?); the known keys are devices, max_builds, admin, "
        "maintainers, build_env",
    ]


def test_empty_file_lists_every_required_field(tmp_path):
    dirs = make_dirs(tmp_path)
    empty = write_file(dirs.backends / "demo.yaml", "# nothing yet\n")

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value).splitlines() == [
        f"{empty}: {field}: required field is missing"
        for field in ("description", "maintainers", "level", "device", "branches", "suites")
    ]


def test_a_relay_without_backend_files_is_refused(tmp_path):
    dirs = make_dirs(tmp_path)
    write_worker(dirs.workers, "gpu-host")

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value) == f"{dirs.backends}: no backend files (*.yaml)"


def test_a_missing_backends_directory_is_refused(tmp_path):
    dirs = make_dirs(tmp_path)
    dirs.backends.rmdir()

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value) == f"{dirs.backends}: directory does not exist"


def test_paths_inside_the_repository_are_shown_relative_to_it(tmp_path):
    """Messages about committed files read as users wrote them; other paths stay as given."""
    assert display_path(REPO_ROOT / "backends" / "spyre.yaml") == "backends/spyre.yaml"
    assert display_path(tmp_path / "backends" / "spyre.yaml") == str(tmp_path / "backends" / "spyre.yaml")


# Good files.


def test_committed_backends_and_workers_load():
    relay = load_relay_config(load_settings(environ={}))

    assert [b.name for b in relay.backends] == ["demo", "spyre"]
    assert [w.name for w in relay.hosts] == ["demo-local"]
    demo, spyre = relay.backends
    assert (demo.level, demo.device, demo.reports_to_github) == ("L1", "demo", False)
    assert [(s.name, s.timeout) for s in demo.suites] == [("smoke", 300), ("ops", 300)]
    assert (spyre.level, spyre.device, spyre.reports_to_github) == ("L2", "spyre", True)
    # torch-spyre's shape: the shared CPU torch build, its own build against it, suites in shards and on two cards.
    assert [(s.name, s.timeout, s.shards, s.units) for s in spyre.suites] == [
        ("view-ops", 3600, 1, 1), ("torch", 5400, 3, 1), ("binary-ufuncs", 3600, 1, 2)]
    assert (spyre.uses, spyre.build_device) == (["torch-cpu"], "cpu")
    assert relay.shared_builds["torch-cpu"].artifacts == ["dist/torch-*.whl"]
    assert relay.hosts[0].devices == {"demo": 2}
    # No host offers Spyre (nor a CPU to build on) yet: the backend is known but gets no builder.
    assert [b.name for b in relay.active_backends] == ["demo"]
    assert relay.warnings == [
        "backends/spyre.yaml: no worker offers 'spyre' (device), 'cpu' (build: device, uses: torch-cpu); the "
        "backend stays inactive (no builder) until hosts with them are registered"
    ]


def test_file_stem_is_the_name_and_defaults_apply(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(
        dirs.backends,
        "npu",
        maintainers=["@octocat"],
        suites=[{"name": "smoke", "command": "true"}, {"name": "ops", "command": "true", "timeout": 60}],
    )
    write_worker(dirs.workers, "lab-1", devices={"demo": 2, "npu": 3})
    write_worker(dirs.workers, "lab-2", devices={"demo": 4}, max_builds=1, maintainers=["@alice", "bob"],
                 build_env="/opt/torch-2.5/venv")

    relay = load_relay_config(settings_for(dirs))

    (npu,) = relay.backends
    assert npu.name == "npu"
    assert npu.maintainers == ["octocat"]
    assert npu.timeout == 10800
    assert npu.stale_after == 21600  # 6 hours, as PyTorch's sweep of zombie requests
    assert (npu.setup, npu.env) == ([], {})
    assert npu.queue == "newest"
    assert [(s.name, s.timeout) for s in npu.suites] == [("smoke", 3600), ("ops", 60)]
    lab1, lab2 = relay.hosts
    assert (lab1.name, lab1.max_builds, lab1.build_slots) == ("lab-1", None, 5)
    assert (lab2.name, lab2.max_builds, lab2.build_slots) == ("lab-2", 1, 1)
    assert (lab1.maintainers, lab2.maintainers) == ([], ["alice", "bob"])
    # Builds run in the worker's own venv unless the host names another.
    assert (lab1.build_env, lab2.build_env) == ("worker", "/opt/torch-2.5/venv")
    assert [u.worker_name for u in lab1.units] == ["lab-1-demo-0", "lab-1-demo-1", "lab-1-npu-0", "lab-1-npu-1", "lab-1-npu-2"]


def test_a_backend_may_ask_for_one_build_per_commit(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "slow", queue="newest")
    write_backend(dirs.backends, "fast", queue="every")

    assert [(b.name, b.queue) for b in load_relay_config(settings_for(dirs)).backends] == [
        ("fast", "every"), ("slow", "newest")
    ]


def test_unit_worker_names_repeated_across_hosts_are_refused(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    write_worker(dirs.workers, "lab", devices={"x-demo": 1})
    write_worker(dirs.workers, "lab-x", devices={"demo": 1})

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value) == (
        f"{dirs.workers / 'lab.yaml'}: devices: the unit worker name 'lab-x-demo-0' is also one of "
        f"{dirs.workers / 'lab-x.yaml'}'s; rename one of the hosts"
    )


def test_load_model_reads_one_worker_file(tmp_path):
    path = write_worker(tmp_path, "gpu_host-1", devices={"spyre": 4}, admin="Spyre Lab <lab@example.com>")

    host = load_model(path, WorkerHost)

    assert host == WorkerHost(name="gpu_host-1", devices={"spyre": 4}, admin="Spyre Lab <lab@example.com>")


def test_warning_for_a_device_no_worker_offers(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    npu = write_backend(dirs.backends, "npu", device="npu")
    write_worker(dirs.workers, "lab-1", devices={"demo": 1})

    relay = load_relay_config(settings_for(dirs))

    assert [b.name for b in relay.active_backends] == ["demo"]
    assert relay.warnings == [
        f"{npu}: device: no worker offers 'npu'; the backend stays inactive (no builder) "
        "until a host with it is registered"
    ]


def test_a_device_no_worker_offers_is_told_with_the_offered_device_it_may_mean(tmp_path):
    dirs = make_dirs(tmp_path)
    typo = write_backend(dirs.backends, "demo", device="dmeo")
    write_worker(dirs.workers, "lab-1", devices={"demo": 1})

    relay = load_relay_config(settings_for(dirs))

    assert relay.warnings == [
        f"{typo}: device: no worker offers 'dmeo' (did you mean 'demo'?); the backend stays inactive (no builder) "
        "until a host with it is registered"
    ]


def shared_build(dirs, name: str, **fields) -> Path:
    folder = dirs.backends / "builds"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"steps": ["python setup.py bdist_wheel"], "artifacts": ["dist/*.whl"], **fields}))
    return path


def test_shared_builds_are_read_from_the_builds_folder_and_a_backend_uses_them_by_name(tmp_path):
    dirs = make_dirs(tmp_path)
    shared_build(dirs, "torch-cpu")
    write_backend(dirs.backends, "demo", uses=["torch-cpu"])
    write_worker(dirs.workers, "lab-1", devices={"demo": 1, "cpu": 1})

    relay = load_relay_config(settings_for(dirs))

    assert relay.shared_builds["torch-cpu"].device == "cpu", "the default device of a shared build"
    assert [b.name for b in relay.used_shared_builds()] == ["torch-cpu"]


def test_a_backend_using_an_unknown_or_invalid_shared_build_is_refused_naming_both(tmp_path):
    dirs = make_dirs(tmp_path)
    broken = shared_build(dirs, "torch-gpu", artifacts=[])
    shared_build(dirs, "torch-cpu")
    demo = write_backend(dirs.backends, "demo", uses=["torch-gpu", "torch-xpu"])
    write_worker(dirs.workers, "lab-1", devices={"demo": 1, "cpu": 1})

    with pytest.raises(ConfigError) as refused:
        load_relay_config(settings_for(dirs))

    assert str(refused.value).splitlines() == [
        f"{broken}: artifacts: must not be empty",
        f"{demo}: uses: 'torch-gpu', 'torch-xpu' is no shared build (its file is invalid: see above); "
        f"{display_path(dirs.backends / 'builds')}/ holds: torch-cpu",
    ]


@pytest.mark.parametrize("fields, message", [
    ({"compiler_cache": "distcc"}, "compiler_cache.kind: should be 'ccache' or 'sccache' (got 'distcc')"),
    ({"compiler_cache": {"kind": "ccache", "max_size": "lots"}},
     "compiler_cache.max_size: must be a size such as 500M, 20G or 1.5T (got 'lots')"),
    ({"reuse": {"paths": ["torch/**.py"]}}, "reuse.steps: required field is missing"),
    ({"reuse": {"paths": ["/torch/**.py"], "steps": ["patch"]}},
     "reuse.paths: '/torch/**.py': must be a glob relative to the upstream repository (no '..', no leading '/')"),
])
def test_a_bad_compiler_cache_or_reuse_is_refused_naming_the_file_and_field(tmp_path, fields, message):
    dirs = make_dirs(tmp_path)
    broken = shared_build(dirs, "torch-cpu", **fields)
    write_backend(dirs.backends, "demo", uses=["torch-cpu"])
    write_worker(dirs.workers, "lab-1", devices={"demo": 1, "cpu": 1})

    with pytest.raises(ConfigError) as refused:
        load_relay_config(settings_for(dirs))

    assert str(refused.value).splitlines()[0] == f"{broken}: {message}"


def test_a_shared_build_whose_device_no_host_offers_leaves_its_users_inactive_with_a_warning(tmp_path):
    dirs = make_dirs(tmp_path)
    shared_build(dirs, "torch-cpu")
    demo = write_backend(dirs.backends, "demo", uses=["torch-cpu"])
    write_worker(dirs.workers, "lab-1", devices={"demo": 1})

    relay = load_relay_config(settings_for(dirs))

    assert relay.active_backends == [] and relay.used_shared_builds() == []
    assert relay.warnings == [f"{demo}: uses: torch-cpu: no worker offers 'cpu'; the backend stays inactive (no "
                              "builder) until a host with it is registered"]
    write_backend(dirs.backends, "demo", device="spyre", uses=["torch-cpu"], build={"device": "cpu", "steps": ["make"],
                                                                                   "artifacts": ["dist/*"]})
    assert load_relay_config(settings_for(dirs)).warnings == [
        f"{demo}: no worker offers 'spyre' (device), 'cpu' (build: device, uses: torch-cpu); the backend stays "
        "inactive (no builder) until hosts with them are registered"], "one warning naming every device it lacks"


def test_a_suite_on_more_units_than_any_host_has_refuses_its_backend_naming_the_widest_host(tmp_path):
    """A child build takes its units on one host: a suite wider than every host of its device would wait for ever.
    The host files are configuration too: removing the wide host refuses that change, naming the backend."""
    dirs = make_dirs(tmp_path)
    demo = write_backend(dirs.backends, "demo", suites=[{**SMOKE, "units": 3}])
    write_backend(dirs.backends, "other")
    write_worker(dirs.workers, "lab-1", devices={"demo": 1})
    write_worker(dirs.workers, "lab-2", devices={"demo": 2})
    refusal = (f"{demo}: suite smoke: units: 3, and no host has 3 'demo' units (the most: 2, "
               f"{display_path(dirs.workers / 'lab-2.yaml')}); its child builds, which take their units on one "
               "host, would never start")

    with pytest.raises(ConfigError) as refused:
        load_relay_config(settings_for(dirs))  # `crcr check`, a reconfig
    assert str(refused.value) == refusal
    at_start = load_relay_config(settings_for(dirs), leave_out_invalid=True)
    assert ([b.name for b in at_start.backends], at_start.left_out) == (["other"], [refusal])

    wide = write_worker(dirs.workers, "lab-3", devices={"demo": 3})
    relay = load_relay_config(settings_for(dirs))
    assert (relay.warnings, relay.left_out) == ([], [])

    wide.unlink()
    with pytest.raises(ConfigError) as refused:
        load_relay_config(settings_for(dirs))
    assert str(refused.value) == refusal


def test_a_backends_infrastructure_failures_are_its_devices_with_its_own_patterns_added_and_keys_first(tmp_path):
    dirs = make_dirs(tmp_path)
    write_file(dirs.workers / "devices" / "spyre.yaml", yaml.safe_dump({"infra_failures": {
        "patterns": [r"RAS::\w+::\w+", {"pattern": "card lost", "in_tests": True}], "stall": True, "tries": 2}}))
    write_backend(dirs.backends, "spyre", device="spyre", infra_failures={"patterns": ["DeviceOpenFail"], "tries": 4})
    write_backend(dirs.backends, "plain", device="demo")
    write_worker(dirs.workers, "lab-1", devices={"spyre": 2, "demo": 1})

    relay = load_relay_config(settings_for(dirs))
    plain, spyre = map(relay.infra_rules, relay.backends)

    assert [(p.pattern, p.in_tests) for p in spyre.patterns] == [
        (r"RAS::\w+::\w+", False), ("card lost", True), ("DeviceOpenFail", False)]
    assert (spyre.signals, spyre.stall, spyre.tries) == (("SIGKILL", "SIGBUS", "SIGSEGV"), True, 4)
    assert plain == InfraRules(), "a device without a file has the relay's defaults"


def test_a_device_file_with_a_bad_pattern_is_refused_naming_file_and_field(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    write_worker(dirs.workers, "lab-1")
    bad = write_file(dirs.workers / "devices" / "demo.yaml",
                     "infra_failures:\n  patterns: ['RAS[']\n  signals: [SIGHUP]\n")

    with pytest.raises(ConfigError) as refused:
        load_relay_config(settings_for(dirs))

    assert str(refused.value).splitlines() == [
        f"{bad}: infra_failures.patterns.0.pattern: not a valid regular expression: unterminated character set at "
        "position 3 (got 'RAS[')",
        f"{bad}: infra_failures.signals.0: should be 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGILL', 'SIGKILL', 'SIGSEGV' "
        "or 'SIGTERM' (got 'SIGHUP')",
    ]


def test_warning_for_a_branch_the_poller_does_not_follow(tmp_path):
    dirs = make_dirs(tmp_path)
    release = write_backend(dirs.backends, "demo", branches=["main", "release/2.5", "nightly"])
    write_worker(dirs.workers, "lab-1")

    relay = load_relay_config(settings_for(dirs, CRCR_UPSTREAM_BRANCHES="main,nightly"))

    assert relay.warnings == [
        f"{release}: branches: release/2.5 not followed by the poller (CRCR_UPSTREAM_BRANCHES); only forced builds"
    ]


def test_no_warnings_when_every_backend_has_a_host_and_followed_branches(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo", branches=["main", "release/2.5"])
    write_worker(dirs.workers, "lab-1")

    relay = load_relay_config(settings_for(dirs, CRCR_UPSTREAM_BRANCHES="main,release/2.5"))

    assert relay.warnings == []


@pytest.mark.parametrize(
    "password, mode, problem",
    [
        (None, None, "does not exist"),
        ("", 0o600, "is empty"),
        ("\n", 0o600, "is empty"),
        ("s3cret\n", 0o644, "is readable by others (mode 0644); run chmod 600 on it"),
    ],
    ids=["missing", "empty", "only-newline", "mode-0644"],
)
def test_host_without_usable_password_is_left_out_with_a_warning(tmp_path, password, mode, problem):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    write_worker(dirs.workers, "good-host")
    bad_host = write_worker(dirs.workers, "bad-host")
    write_worker_password(dirs.secrets, "good-host")
    if password is not None:
        write_worker_password(dirs.secrets, "bad-host", value=password, mode=mode)
    relay = load_relay_config(settings_for(dirs))

    checked = require_worker_passwords(relay, dirs.secrets)

    assert [w.name for w in checked.hosts] == ["good-host"]
    assert checked.warnings == [
        f"{bad_host}: host left out: its password file {dirs.secrets / 'worker-bad-host'} {problem}"
    ]
    assert [b.name for b in checked.backends] == ["demo"]


def test_hosts_with_passwords_are_all_kept(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    for host in ("lab-1", "lab-2"):
        write_worker(dirs.workers, host)
        write_worker_password(dirs.secrets, host, mode=0o400)
    relay = load_relay_config(settings_for(dirs))

    checked = require_worker_passwords(relay, dirs.secrets)

    assert [w.name for w in checked.hosts] == ["lab-1", "lab-2"]
    assert checked.warnings == []


def test_leaving_a_host_out_can_deactivate_its_backend(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    write_worker(dirs.workers, "lab-1")
    relay = load_relay_config(settings_for(dirs))

    checked = require_worker_passwords(relay, dirs.secrets)

    assert [b.name for b in relay.active_backends] == ["demo"]
    assert checked.active_backends == []


def test_backend_base_fields_are_a_valid_file():
    """The writers' minimal file must itself load, or every bad-file row would test two problems at once."""
    assert Backend(name="demo", **BACKEND).suites[0].timeout == 3600


@pytest.mark.parametrize(
    "files, message",
    [
        ({}, "{backend}: suites.0.pytest.skip_list: {root}/backends/skips.txt does not exist"),
        (
            {"skips.txt": "test/test_a.py::test_x\nnot a node id\n"},
            "{backend}: suites.0.pytest.skip_list: {root}/backends/skips.txt: line 2: not a pytest node id "
            "(test/test_a.py::TestA::test_b): 'not a node id'",
        ),
        (
            {"skips.txt": '{"nodeid": "test/test_a.py::test_x"}\n{"reason": "no id"}\n'},
            "{backend}: suites.0.pytest.skip_list: {root}/backends/skips.txt: line 2: a JSON line needs a 'nodeid' "
            "such as test/test_a.py::TestA::test_b",
        ),
        (
            {"skips.txt": "{broken\n"},
            "{backend}: suites.0.pytest.skip_list: {root}/backends/skips.txt: line 1: not valid JSON "
            "(Expecting property name enclosed in double quotes)",
        ),
    ],
    ids=["missing", "not-a-node-id", "json-without-nodeid", "bad-json"],
)
def test_a_bad_skip_list_is_refused_naming_backend_field_file_and_line(tmp_path, files, message):
    dirs = make_dirs(tmp_path)
    path = write_backend(dirs.backends, "demo", suites=[
        {"name": "ops", "pytest": {"files": ["test/test_a.py"], "skip_list": "skips.txt"}}
    ])
    for name, text in files.items():
        write_file(dirs.backends / name, text)

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value) == message.format(backend=path, root=tmp_path)


def test_an_invalid_torch_spyre_config_is_refused_naming_the_backend_field_and_the_configs_field(tmp_path):
    dirs = make_dirs(tmp_path)
    path = write_backend(dirs.backends, "spyre", suites=[{"name": "ops", "pytest": {"torch_spyre": "spyre/ops.yaml"}}])
    write_file(dirs.backends / "spyre" / "ops.yaml", "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_ops.py\n"
               "      tests:\n        - names: [TestOps::test_add]\n          mode: sometimes\n")

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value).startswith(
        f"{path}: suites.0.pytest.torch_spyre: {dirs.backends / 'spyre' / 'ops.yaml'}: "
        "test_suite_config.files[0].tests[0].mode: "
    )


def test_skip_list_lines_and_json_lines_both_give_node_ids(tmp_path):
    skips = write_file(tmp_path / "skips.jsonl", "# comment\n\ntest/test_a.py::TestA::test_b\n"
                       '{"nodeid": "test/test_c.py::test_d[1]", "reason": "crash"}\n')
    assert read_skip_list(skips) == ["test/test_a.py::TestA::test_b", "test/test_c.py::test_d[1]"]


def test_a_yaml_alias_bomb_is_refused_at_once_naming_its_line(tmp_path):
    """A few hundred bytes of aliases of aliases stand for 10**9 values: refused before anything walks them."""
    dirs = make_dirs(tmp_path)
    head = backend_yaml()
    path = write_file(dirs.backends / "demo.yaml", head + alias_bomb("env") + "timeout: *l8\n")

    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))

    assert str(raised.value) == (
        f"{path}: line {len(head.splitlines()) + 6}, column 7: aliases repeat more than 100000 values by here: "
        "anchors nested in anchors make this small file huge once read, so the relay refuses it")
