"""The unit tests' SQLAlchemy engines of one kind share one dialect and one cache of compiled statements.

Every unit test with a fake master gets a new engine (Buildbot's enginestrategy.create_engine), and SQLAlchemy keys
its cache of compiled SQL by the dialect object, which each engine makes for itself: so every test compiled the same
few hundred statements of Buildbot's and the relay's queries again, the largest share of the unit tests' CPU after
making the schema (copied_schema.py). The SQL a statement compiles to depends on the dialect's kind and the
database's version, which are the same for every engine of a kind in one test process; the statements, their
parameters and their results are each engine's own as before.
"""

from __future__ import annotations

import sqlalchemy as sa
from buildbot.db import enginestrategy

_made_alone = sa.create_engine


def install(patch) -> None:
    shared: dict[str, tuple] = {}  # drivername -> (dialect, compiled cache) of the first engine of that kind

    def create_engine(url, **kwargs):
        engine = _made_alone(url, **kwargs)
        first = shared.setdefault(engine.url.drivername, (engine.dialect, engine._compiled_cache))
        engine.dialect = engine.pool._dialect = first[0]
        engine._compiled_cache = first[1]
        return engine

    patch.setattr(enginestrategy.sa, "create_engine", create_engine)
