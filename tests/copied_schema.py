"""The tables of the unit tests' SQLite databases made once per test process and copied after that.

`fakemaster.make_master` builds a fresh database for each unit test by running Buildbot's schema (`Model.upgrade`:
over a hundred tables and indexes), the relay's store then runs its own migrations on it, and the tests of the
relay's queries and commands make the relay's tables alone the same way: together about a third of the unit tests'
time, the same statements every time. Here the first empty database of each kind is made as always, by the
migrations, and kept in memory; every later empty one is a copy of it (SQLite's backup API), which Buildbot's
upgrade is spared and the relay's migrations find up to date. The tables are the ones the migrations make, not a
second description of them; the migrations themselves are tested from an empty database in test_store.py.
"""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa
from buildbot.db import model
from twisted.internet import defer

from crcr.store.migrate import upgrade_tables

_made_by_upgrade = model.Model.upgrade
_kept: dict[str, sqlite3.Connection] = {}  # by kind: the first database the migrations made


def _is_empty(conn) -> bool:
    return conn.dialect.name == "sqlite" and not sa.inspect(conn).get_table_names()


def _copy(conn, kind: str) -> bool:
    """Copies the kept database of `kind` into `conn`'s when that is empty: whether it did."""
    if kind not in _kept or not _is_empty(conn):
        return False
    _kept[kind].backup(conn.connection.dbapi_connection)
    return True


def _keep(conn, kind: str) -> None:
    kept = sqlite3.connect(":memory:", check_same_thread=False)  # copied from Buildbot's database threads too
    conn.connection.dbapi_connection.backup(kept)
    _kept[kind] = kept


def relay_tables(conn) -> None:
    """upgrade_tables(conn): the relay's tables alone, as a test of the relay's queries or commands needs them."""
    if _copy(conn, "relay"):
        return
    empty = _is_empty(conn)
    upgrade_tables(conn)
    if empty:
        _keep(conn, "relay")


def _buildbots_and_relays(conn) -> None:
    """The database Buildbot's upgrade just made, with the relay's tables, as the master's store makes them."""
    upgrade_tables(conn)
    _keep(conn, "master")


@defer.inlineCallbacks
def upgrade_by_copy(self):
    """Model.upgrade, or a copy of the kept database where this one is an empty SQLite one: the copy is what the
    upgrade made, which it would only read its migrations again to find up to date."""
    pool = self.db.pool
    if (yield pool.do(_copy, "master")):
        return
    empty = yield pool.do(_is_empty)
    yield _made_by_upgrade(self)
    if empty and "master" not in _kept:
        yield pool.do(_buildbots_and_relays)


def install(monkeypatch) -> None:
    monkeypatch.setattr(model.Model, "upgrade", upgrade_by_copy)
