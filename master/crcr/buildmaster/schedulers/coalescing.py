"""A backend's queue policy as Buildbot's collapseRequests: which queued build requests a newer one replaces.

Buildbot's BuildRequestCollapser (buildbot/process/buildrequest.py) runs when a buildset is added: it asks the
builder's collapseRequests function about each unclaimed older request of the builder, then claims those it
approved and completes them SKIPPED. With `queue: newest`, only requests of the backend's upstream scheduler
are collapsed, and only into a newer one of that scheduler; forced, bisection, rebuilt and pull-request requests
never are, and nothing is collapsed into them: their builds answer a question about one exact commit. Each approval
is noted in the relay's store, where the ledger (on whichever master leads, now or after a restart) finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from buildbot.process.buildrequest import BuildRequest
from buildbot.util.twisted import async_to_deferred

from crcr.config.backend import QUEUE_EVERY, Backend
from crcr.names import upstream_scheduler_name
from crcr.store.service import relay_store

KNOWN_BUILDSETS = 10_000  # remembered per backend; far more than a queue holds


def collapse_requests(backend: Backend) -> Callable | Literal[False]:
    """The value of the backend's BuilderConfig.collapseRequests."""
    if backend.queue == QUEUE_EVERY:
        return False  # Buildbot then never collapses: one build per request
    upstream = upstream_scheduler_name(backend.name)
    # Buildset id -> whether the upstream scheduler asked for it: the collapser asks about every queued request
    # at each arrival, and a buildset's properties never change, so each is read from the database once.
    asked_by_upstream: dict[int, bool] = {}

    async def from_upstream(master, br: dict) -> bool:
        bsid = br["buildsetid"]
        if bsid not in asked_by_upstream:
            if len(asked_by_upstream) >= KNOWN_BUILDSETS:
                asked_by_upstream.clear()
            asked_by_upstream[bsid] = await asked_by(master, br, upstream)
        return asked_by_upstream[bsid]

    @async_to_deferred
    async def collapse_into_newer_upstream(master, builder, new_br: dict, old_br: dict) -> bool:
        if not (await from_upstream(master, new_br) and await from_upstream(master, old_br)):
            return False
        # Buildbot's own test: the new request is the newer one, of the same branch, repository and project.
        if not await BuildRequest.canBeCollapsed(master, new_br, old_br):
            return False
        await note_approval(master, new_br, old_br)
        return True

    return collapse_into_newer_upstream


async def asked_by(master, br: dict, scheduler: str) -> bool:
    """Whether `scheduler` asked for the request: Buildbot's schedulers record their name in their buildsets'
    properties. A rebuild (the build page's Rebuild button) copies the properties of the buildset it repeats,
    that name included, so it is told apart by the build it rebuilds."""
    bsid = str(br["buildsetid"])
    properties = await master.data.get(("buildsets", bsid, "properties"))
    if properties.get("scheduler", (None, None))[0] != scheduler:
        return False
    buildset = await master.data.get(("buildsets", bsid))
    return buildset["rebuilt_buildid"] is None


async def note_approval(master, new_br: dict, old_br: dict) -> None:
    """Note for the ledger that the old request's commit is to be covered by the new request's build.

    An approval, not yet a collapse: the collapser claims the old request only after every answer, and a unit
    may have claimed it meanwhile, in which case it builds after all (it is then not completed SKIPPED).
    A reader must treat a request that starts its own build as built, whatever was approved for it.
    """
    store = relay_store(master)
    await store.approve_collapse(old_br["buildrequestid"], new_br["buildrequestid"], master.reactor.seconds())
