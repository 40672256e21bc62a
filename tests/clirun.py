"""`crcr ARGS` run inside the test process: crcr.cli.main.main(argv), output captured, as fast as a function call.

The commands under test read only their arguments, the CRCR_* environment and the files; running them in
process gives the same exit code, stdout and stderr as the installed `crcr` (tests/test_cli_check.py
runs that one for real) without a Python start-up per call.
"""

from __future__ import annotations

import subprocess

import pytest

from crcr.cli.main import main


class InProcessCrcr:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, env: dict[str, str]):
        self._monkeypatch, self._capsys, self.env = monkeypatch, capsys, env

    def __call__(self, *args, **env: str) -> subprocess.CompletedProcess:
        """Run `crcr ARGS` with self.env and `env` (for this call only) set; never raises on a failure."""
        argv = [str(a) for a in args]
        self._capsys.readouterr()  # only this call's output
        with self._monkeypatch.context() as m:
            for name, value in {**self.env, **env}.items():
                m.setenv(name, value)
            try:
                code = main(argv)
            except SystemExit as e:  # argparse: --help and usage errors
                code = e.code or 0
        out = self._capsys.readouterr()
        return subprocess.CompletedProcess(["crcr", *argv], code, out.out, out.err)
