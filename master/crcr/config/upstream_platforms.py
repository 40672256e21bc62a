"""The platform keys PyTorch disables tests on: its check_if_enable's platform_to_conditional (common_utils.py). A
backend's `disabled_platforms:` names those it counts as its own (suites/disabled_upstream.py)."""

from __future__ import annotations

PLATFORMS = ("mac", "macos", "win", "windows", "linux", "rocm", "xpu", "asan", "dynamo", "dynamo_wrapped",
             "inductor", "slow")
