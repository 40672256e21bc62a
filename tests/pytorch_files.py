"""PyTorch's own test files and torch-spyre's configs, read in place beside the repository (never copied
into it: see SOURCES.md there), and what their source says without importing torch."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
PYTORCH_TESTS = FIXTURES / "pytorch-tests"
TORCH_SPYRE_CONFIGS = FIXTURES / "pytorch-oot"
# The files of PyTorch's checkout a run of its tests needs, relative to the checkout.
PYTORCH_FILES = ("pytest.ini", "test/conftest.py", "test/pytest_shard_custom.py", "test/test_view_ops.py",
                 "test/test_binary_ufuncs.py")


def pytorch_tests() -> Path:
    """The folder of PyTorch's test files; the calling test skips, saying where it looked, without it."""
    missing = [name for name in PYTORCH_FILES if not (PYTORCH_TESTS / name).is_file()]
    if missing or not (TORCH_SPYRE_CONFIGS / "test_view_ops_config.yaml").is_file():
        pytest.skip(f"PyTorch's test files and torch-spyre's configs are not in {FIXTURES}")
    return PYTORCH_TESTS


def methods_by_class(source: str) -> dict[str, list[str]]:
    """Per class of a test module, its test methods before PyTorch instantiates them, in order."""
    return {
        node.name: [f.name for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef)
    }


def module_functions(source: str) -> list[str]:
    """The functions a test module defines outside any class."""
    return [node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]
