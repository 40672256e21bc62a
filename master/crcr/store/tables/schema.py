"""The one MetaData the relay's tables are defined on (what the tests compare the migrations with), and what every
area's tables share: column widths and the check of a state's value.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

SHA_LENGTH = 40
STATE_LENGTH = 16


def check_value(field: str, value: str, allowed: tuple[str, ...]) -> None:
    """A mistyped state would be stored silently and never match a query: refuse it."""
    if value not in allowed:
        raise ValueError(f"{field} must be one of {', '.join(allowed)}, not {value!r}")
