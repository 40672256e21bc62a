"""The master's database as the crcr command opens it: the settings' db_url, a relative SQLite path taken from the
master directory as Buildbot takes it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

DEFAULT_PORTS = {"postgresql": 5432}
# Seconds: a server behind a firewall that drops packets would hold a start for minutes.
CONNECT_TIMEOUT = 10


def database_url(db_url: str, basedir: Path | None) -> sa.URL:
    """Raises RuntimeError for a relative SQLite path without a master directory to take it from."""
    url = sa.make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).is_absolute():
        if basedir is None:
            raise RuntimeError(
                f"the database {db_url} (CRCR_DB_URL) is a path relative to the master directory: give --basedir"
            )
        url = url.set(database=str(basedir / url.database))
    return url


def engine(db_url: str, basedir: Path | None) -> sa.Engine:
    return sa.create_engine(database_url(db_url, basedir))


@contextmanager
def existing_database(db_url: str, basedir: Path | None) -> Iterator[sa.Connection]:
    """A connection to a database that is there already: a missing SQLite file is not created (SQLite would), and
    neither it nor an unreachable server is a traceback but a RuntimeError saying which database."""
    url = database_url(db_url, basedir)
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).exists():
        raise RuntimeError(f"no database at {url.database}: the master creates it when it first starts")
    # A server that takes the connection and says nothing would hold the command for good.
    opened = sa.create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT} if url.host else {})
    try:
        try:
            conn = opened.connect()
        except sa.exc.SQLAlchemyError as e:
            raise RuntimeError(f"cannot open the database {shown}: {_reason(e)}") from None
        with conn:
            try:
                yield conn
            except sa.exc.SQLAlchemyError as e:  # not a database, or the server went away
                raise RuntimeError(f"cannot read the database {shown}: {_reason(e)}") from None
    finally:
        opened.dispose()


def check_server(db_url: str, basedir: Path | None) -> None:
    """Before the master is prepared and started: a database on a server (PostgreSQL) that does not answer, or
    refuses the connection, is a RuntimeError saying where (never the password) and what to do, rather than the
    traceback Buildbot's upgrade-master prints. SQLite has no server: the master creates its file."""
    url = database_url(db_url, basedir)
    if url.get_backend_name() == "sqlite":
        return
    port = url.port or DEFAULT_PORTS.get(url.get_backend_name())
    if url.host and port:  # else a local socket: the connection below tells
        try:
            socket.create_connection((url.host, port), timeout=CONNECT_TIMEOUT).close()
        except OSError as e:
            raise RuntimeError(
                f"the database at {url.host}:{port} does not answer ({e.strerror or e}): start its server, or set "
                "CRCR_DB_URL to one that runs; the master was not started"
            ) from None
    with existing_database(db_url, basedir):
        pass


def _reason(error: sa.exc.SQLAlchemyError) -> str:
    """The driver's own first line, without SQLAlchemy's statement and background link."""
    return str(getattr(error, "orig", None) or error).strip().splitlines()[0]
