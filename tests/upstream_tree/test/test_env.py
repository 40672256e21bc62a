"""Run by the relay inside a build: checks the environment the relay promises to commands."""

import os
import subprocess


def test_relay_environment():
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert os.environ["CRCR_UPSTREAM_SHA"] == head
    assert os.path.realpath(os.environ["CRCR_UPSTREAM_DIR"]) == os.path.realpath(os.getcwd())
    assert os.path.isdir(os.environ["CRCR_RESULTS_DIR"])
    assert os.listdir(os.environ["CRCR_RESULTS_DIR"]) == ["setup-done"], "results are cleared per build"
    assert os.environ["CRCR_BACKEND"] == "ok-alpha"
    assert os.environ["PYTORCH_TESTING_DEVICE_ONLY_FOR"] == "alpha"
    assert os.environ["CRCR_DEVICE_INDEX"] in ("0", "1"), "host-alpha has two alpha units"
