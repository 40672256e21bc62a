"""The relay's tables as the newest migration leaves them, for the queries (tests check that both agree): each area's
in a module of its own, all on the one MetaData of schema.py. Importing any of them imports them all (below), so that
the MetaData holds every table, whichever the caller wanted.

Times are epoch seconds, as in Buildbot's own tables. Build request and build ids are not foreign keys: the relay's
rows must not hold up, or break on, what Buildbot does with its own tables.
"""

# Each area's tables are on the MetaData once their module ran.
from crcr.store.tables import coordination, culprits, disabled, github, history, ledger, levels, quarantine  # noqa: F401
