"""The baseline's database query on Buildbot's own schema (SQLite, as a trial relay runs it): it must find a
builder's builds at the searched commits without reading the builder's whole history, which grows with every
build (bisection builds many commits of each builder)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from buildbot.db.model import Model

from crcr.store.buildbot_tables import REVISION_INDEX, builds_at, builds_at_query, create_revision_index


class Tables:  # what master.db.model offers the query: Buildbot's tables by name
    builds, build_properties = Model.builds, Model.build_properties


@pytest.fixture
def db(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    Model.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("PRAGMA foreign_keys=OFF"))
        # Builder 1 has the odd builds, at commits 1 and 3 in turn; build 7 is still running.
        rows = [dict(id=i, number=i, builderid=2 - i % 2, buildrequestid=i, masterid=1, started_at=0,
                     locks_duration_s=0, complete_at=None if i == 7 else 1, results=0, state_string="done")
                for i in range(1, 9)]
        conn.execute(Model.builds.insert(), rows)
        conn.execute(Model.build_properties.insert(), [
            dict(buildid=i, name=name, value=json.dumps(value), source="test")
            # another property with the same values, which must not count
            for i in range(1, 9) for name, value in (("got_revision", f"{i % 4:040x}"), ("other", f"{i % 4:040x}"))])
        create_revision_index(conn)
    with engine.connect() as conn:
        yield conn


def test_finds_the_builders_complete_builds_at_the_commits(db):
    found = builds_at(db, Tables, 1, [f"{3:040x}", f"{2:040x}"])  # builder 1 holds the odd build numbers

    assert sorted(found) == [(3, 3, f"{3:040x}")], "build 7 at the same commit has not finished"


def test_reads_builds_by_commit_through_the_revision_index(db):
    commits = [f"{n:040x}" for n in range(50)]
    query = builds_at_query(Tables, 1, commits).compile(db, compile_kwargs={"literal_binds": True})

    plan = " | ".join(row[-1] for row in db.execute(sa.text(f"EXPLAIN QUERY PLAN {query}")))

    assert f"USING INDEX {REVISION_INDEX}" in plan, plan
    assert "builds_number" not in plan, f"the builder's whole history is read: {plan}"


def test_the_index_is_created_once(db):
    create_revision_index(db)  # a restart: already there

    indexes = db.execute(sa.text(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'build_properties'"
    ))
    assert [name for (name,) in indexes].count(REVISION_INDEX) == 1
