"""The backends' levels over time: PyTorch's HUD promotes a backend to L3 after 30 days at L2, which the configuration
alone does not tell (store/levels.py)."""

from __future__ import annotations

import sqlalchemy as sa

from crcr.config.limits import MAX_NAME
from crcr.store.tables.schema import metadata

LEVEL_LENGTH = 2  # L1 to L4

# One row per change of a backend's `level:` the leader saw (services/leader/levels.py); never pruned: a few rows.
backend_levels = sa.Table(
    "crcr_backend_levels",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("level", sa.String(LEVEL_LENGTH), nullable=False),
    sa.Column("since", sa.BigInteger, nullable=False),  # when the leader first saw the backend at this level
    sa.Index("crcr_backend_levels_backend", "backend", "since"),
)
