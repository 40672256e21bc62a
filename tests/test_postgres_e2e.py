"""The relay on PostgreSQL (what a real deployment uses): a push is built and reported as on sqlite."""

from __future__ import annotations

import pytest

from conftest import SUCCESS, backend, prepare_relay, running, suite
from crcr.names import status_context
from harness import wait_until

pytestmark = pytest.mark.e2e


def test_relay_on_postgresql_builds_and_reports_a_push(tmp_path, upstream, github, postgres):
    backends = {"pg-alpha": backend("L2", "alpha", [suite("pass", "test/test_pass.py")])}
    master, workers = prepare_relay(tmp_path, upstream, github, backends, CRCR_DB_URL=postgres.url)
    with running(master, workers):
        sha = upstream.commit("Commit relayed through a PostgreSQL-backed master")
        build = master.wait_for_finished_build("pg-alpha", sha)
        assert build["results"] == SUCCESS
        assert wait_until(
            lambda: [s["state"] for s in github.statuses(sha, status_context("pg-alpha"))][-1:] == ["success"],
            30,
            "the success status of pg-alpha",
        )
    assert "sqlite" not in " ".join(p.name for p in master.basedir.iterdir()), "no sqlite database was used"
