"""The master's database as the crcr command opens it: the settings' db_url, a relative SQLite path taken from the
master directory as Buildbot takes it."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa


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
    opened = sa.create_engine(url)
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


def _reason(error: sa.exc.SQLAlchemyError) -> str:
    """The driver's own first line, without SQLAlchemy's statement and background link."""
    return str(getattr(error, "orig", None) or error).strip().splitlines()[0]
