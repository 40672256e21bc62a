"""The relay's own tables in Buildbot's database: the ledger of upstream commits (one row per backend and commit,
with when it was seen, started and decided, and how) and the bisections with their steps.

tables/ describes them as they are now; migrations/ creates and upgrades them (alembic, with a version table of
their own, so Buildbot's own migrations never see them); migrate.py runs it; commits.py and bisections.py read and
write them on a SQLAlchemy connection; service.py offers those functions to the master as Deferreds.
"""
