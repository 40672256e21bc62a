"""A step takes its unit out (docs/hardware-failures.md): Buildbot's worker pause with its reason, and a message
every master hears, on which the leader mails the host's admin (services/leader/units_out.py)."""

from __future__ import annotations

from crcr.store.service import relay_store

UNIT_PAUSED = ("crcr", "units", "paused")  # {name, workerid, host, admin, backend, card, reason, failure, log_url}


def pause_reason(pause_after: int, failure: str, unit: str) -> str:
    return (f"{pause_after} infrastructure failures in a row, the last {failure}; after a look at its card: "
            f"crcr worker resume {unit}")


def health_check_reason(unit: str, said: str) -> str:
    return f"its health check failed ({said}); after a look at its card: crcr worker resume {unit}"


async def take_out(master, unit: dict, reason: str, failure: str, log_url: str):
    """Pause `unit` ({name, workerid, host, admin, backend, card}) for `reason`, and tell its host's admin, with
    the log of the build that made it (`log_url`)."""
    await master.data.control("pause", {"reason": reason}, ("workers", unit["workerid"]))
    master.mq.produce(UNIT_PAUSED, {**unit, "reason": reason, "failure": failure, "log_url": log_url})


async def take_out_if_failing(master, unit: dict, pause_after: int, failure: str, log_url: str):
    """Take `unit` out when its last `pause_after` builds each hit the hardware, `failure` the last one's text;
    True when it did."""
    if not await relay_store(master).failed_in_a_row(master.db.model, unit["workerid"], pause_after):
        return False
    await take_out(master, unit, pause_reason(pause_after, failure, unit["name"]), failure, log_url)
    return True
