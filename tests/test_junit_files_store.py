"""Each suite's JUnit XML kept byte for byte (store/junit_files.py) on a real SQLite file upgraded by the relay's
migrations (and on PostgreSQL, end to end): one file per build and suite, any bytes, pruned with the history."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from copied_schema import relay_tables
from crcr.store.history import prune
from crcr.store.junit_files import MAX_JUNIT_BYTES, find, keep
from crcr.store.tables.history import junit_files
from test_store import db, open_database  # noqa: F401  (the fixture: a SQLite database with the relay's tables)

# Not valid XML, not UTF-8, a line far past Buildbot's 4,096 characters: kept as it is all the same.
ODD = b'<?xml version="1.0"?><testsuite name="' + b"a" * 5000 + b'"><bad \xff\x00 bytes\r\n'


def test_a_file_is_kept_byte_for_byte_per_build_and_suite(db):
    keep(db, buildid=7, stepid=70, suite="ops", content=ODD, stored_at=1000)
    keep(db, buildid=7, stepid=71, suite="views", content=b"<testsuites/>", stored_at=1000)

    assert find(db, 7, "ops") == ODD
    assert find(db, 7, "views") == b"<testsuites/>"
    assert find(db, 8, "ops") is None
    size = sa.select(junit_files.c.size).where(junit_files.c.suite == "ops")
    assert db.execute(size).scalar() == len(ODD)


def test_a_suites_file_kept_again_replaces_the_first(db):
    keep(db, buildid=7, stepid=70, suite="ops", content=b"first", stored_at=1000)
    keep(db, buildid=7, stepid=70, suite="ops", content=b"second", stored_at=1001)

    assert find(db, 7, "ops") == b"second"
    assert db.execute(sa.select(sa.func.count()).select_from(junit_files)).scalar() == 1


def test_a_file_over_the_bound_is_refused_and_nothing_is_written(db):
    with pytest.raises(ValueError, match=f"over {MAX_JUNIT_BYTES} bytes"):
        keep(db, buildid=7, stepid=70, suite="ops", content=b" " * (MAX_JUNIT_BYTES + 1), stored_at=1000)

    assert find(db, 7, "ops") is None


def test_prune_drops_the_files_kept_before_the_horizon(db):
    keep(db, buildid=7, stepid=70, suite="ops", content=b"old", stored_at=1000)
    keep(db, buildid=8, stepid=80, suite="ops", content=b"new", stored_at=1500)

    assert prune(db, before=1500)["crcr_junit_files"] == 1

    assert (find(db, 7, "ops"), find(db, 8, "ops")) == (None, b"new")


@pytest.mark.e2e
def test_on_postgresql_the_bytes_come_back_as_kept(tmp_path, postgres):
    conn = open_database(postgres.url, tmp_path)
    try:
        relay_tables(conn)
        keep(conn, buildid=7, stepid=70, suite="ops", content=ODD, stored_at=1000)
        keep(conn, buildid=7, stepid=70, suite="ops", content=ODD + b"again", stored_at=1000)

        assert find(conn, 7, "ops") == ODD + b"again"
        assert prune(conn, before=1001)["crcr_junit_files"] == 1
    finally:
        conn.close()
