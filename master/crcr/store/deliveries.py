"""The GitHub webhook deliveries the relay acted on, by their X-GitHub-Delivery id: a redelivery (GitHub's
'Redeliver' button, or a retry) is not acted on twice, also after a restart of the master.

GitHub redelivers only deliveries of the past 3 days, so ids older than KEEP_SECONDS are dropped as new ones come.
Each function takes a SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.tables.github import webhook_deliveries

KEEP_SECONDS = 7 * 24 * 3600


def claim_delivery(conn, delivery: str, event: str, received_at: float) -> bool:
    """True when the delivery is new, and is now recorded as acted on; False when it was claimed before."""
    conn.execute(webhook_deliveries.delete().where(webhook_deliveries.c.received_at < int(received_at) - KEEP_SECONDS))
    try:
        conn.execute(webhook_deliveries.insert().values(delivery=delivery, event=event, received_at=int(received_at)))
    except sa.exc.IntegrityError:  # the id is unique: inserting is also how two masters agree on who acts
        conn.rollback()
        return False
    conn.commit()
    return True


def release_delivery(conn, delivery: str) -> None:
    """Acting on the delivery failed: a redelivery of it may act."""
    conn.execute(webhook_deliveries.delete().where(webhook_deliveries.c.delivery == delivery))
    conn.commit()
