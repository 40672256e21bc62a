"""Fan-out: start, reconfig and memory of a master as the fleet grows (1, 80, 240, 800 units), crcr against
vanilla Buildbot with the same workers and builders. Targets (issue 13): reconfig within 2x vanilla at 800
units, and `crcr master start` truthful at every size (it returns only once the master runs)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from relays import CrcrSide, Fleet, StartFailed, VanillaSide, median, print_table

RECONFIGS = 3
RECONFIG_TARGET = 2.0


def fleet_of(units: int) -> Fleet:
    """As a large relay is shaped: hosts of 4 units, 8 units per backend, 32 units per device kind."""
    if units < 4:
        return Fleet(backends=1, hosts=1, units_per_host=units, devices=1)
    return Fleet(backends=max(1, units // 8), hosts=units // 4, units_per_host=4, devices=max(1, units // 32))


def measure(side_class, root: Path, fleet: Fleet) -> dict:
    with side_class(root, fleet, poll_interval=60) as side:
        side.start()
        started = side.restart()
        rss_started = side.rss_mib()
        reconfigs = [side.reconfig() for _ in range(RECONFIGS)]
        return {"start": started, "reconfig": median(reconfigs), "rss": rss_started, "rss_after": side.rss_mib()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, nargs="+", default=[1, 80, 240, 800])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crcr-bench-fanout-") as tmp:
        for units in args.units:
            fleet = fleet_of(units)
            vanilla = measure(VanillaSide, Path(tmp) / f"vanilla-{units}", fleet)
            try:
                crcr = measure(CrcrSide, Path(tmp) / f"crcr-{units}", fleet)
            except StartFailed as e:
                print(f"\n{units} units: crcr master start was not truthful: {e}")
                continue
            print_table(
                f"{units} units ({fleet.backends} backends, {fleet.hosts} hosts, {fleet.devices} device kinds)",
                [
                    ("restart, s (crcr: `crcr master start`)", vanilla["start"], crcr["start"], None),
                    (f"reconfig, s (median of {RECONFIGS})", vanilla["reconfig"], crcr["reconfig"],
                     RECONFIG_TARGET if units >= 800 else None),
                    ("RSS after start, MiB", vanilla["rss"], crcr["rss"], None),
                    (f"RSS after {RECONFIGS} reconfigs, MiB", vanilla["rss_after"], crcr["rss_after"], None),
                ],
            )


if __name__ == "__main__":
    main()
