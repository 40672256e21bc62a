"""What every trigger of a parent build shares (its build stage, its fan-out): Buildbot's Trigger, which adds the
children's buildset (naming the parent, so that the UI links them), waits for them and cancels them when the parent
is stopped, with the gaps the relay cannot leave open closed."""

from __future__ import annotations

from buildbot.process.results import CANCELLED
from buildbot.steps.trigger import Trigger
from twisted.internet import defer

from crcr.names import CHILD_TAG


async def announce_revision(step):
    """The commit the parent stands for as its got_revision, which its children check out (Trigger passes it on as
    their revision). Written at once, not at the step's end as Buildbot would: whoever looks for the commit's build
    (the CLI, the health pages) finds the parent while its children run, as it finds a serial build after its
    checkout. Returns it."""
    revision = step.build.getSourceStamp("").revision
    step.setProperty("got_revision", revision, "crcr")
    await step.master.data.updates.setBuildProperty(step.build.buildid, "got_revision", revision, "crcr")
    return revision


def request_complete(master, brid: int) -> defer.Deferred:
    """Fires once build request `brid` is complete. A Deferred, not a coroutine: its callers gather several and
    cancel them when the step is stopped. Not Buildbot's mq.waitUntilEvent: its in-process queue delivers a message
    by going down its list of consumers, from which a waiter that is done removes itself at once, so the next waiter
    of the same message is skipped and waits for ever (two parents waiting for one shared build). Here the waiter is
    done on the reactor's next turn, once the message has gone to every consumer."""
    return defer.ensureDeferred(_until_complete(master, brid))


async def _until_complete(master, brid: int) -> None:
    done = defer.Deferred()

    def arrived(key, message):
        if not done.called:
            master.reactor.callLater(0, lambda: done.called or done.callback(None))

    consumer = await master.mq.startConsuming(arrived, ("buildrequests", str(brid), "complete"))
    try:
        if not (await master.db.buildrequests.getBuildRequest(brid)).complete:
            await done
    finally:
        await defer.maybeDeferred(consumer.stopConsuming)  # a Deferred from some queues, None from the simple one


async def last_build(master, brid: int):
    """The last build of request `brid` (one a lost unit ended RETRY was built again); None when none was made."""
    made = await master.db.builds.getBuilds(buildrequestid=brid)
    return max(made, key=lambda build: build.id) if made else None


class ChildTrigger(Trigger):
    """Triggers the children getSchedulersAndProperties lists through `scheduler` and waits for each; then
    `gathered(builds)` (the last build of each child request, in trigger order, None for one never built) gives the
    step's result."""

    def __init__(self, backend: str, scheduler: str, relationship: str, **kwargs):
        self.backend = backend
        # What a child's page says it is of its parent, beside the link to it.
        super().__init__(schedulerNames=[scheduler], waitForFinish=True, updateSourceStamp=True,
                         parent_relationship=relationship, **kwargs)

    def trigger_entry(self, shown_as: str, properties: dict, reason: str) -> dict:
        """One child's entry of getSchedulersAndProperties: the child shown under the virtual builder `shown_as`,
        tagged as a child of the backend."""
        # A list: Buildbot adds its '_virtual_' tag only to a list (process/build.py getBuilderId).
        shown = {"virtual_builder_name": shown_as, "virtual_builder_tags": [self.backend, CHILD_TAG]}
        return {"sched_name": self.schedulerNames[0], "props_to_set": {**shown, **properties, "reason": reason},
                "unimportant": False}

    def gathered(self, builds: list):
        raise NotImplementedError

    async def run(self):
        await announce_revision(self)
        await super().run()  # its results, the children's worst, are not the parent's: gathered() says
        if self.ended:
            # A request triggered while the stop arrived is not among those Trigger's interrupt cancelled.
            for brid in self.brids:
                self.master.data.control("cancel", {"reason": "parent build was interrupted"}, ("buildrequests", brid))
            return CANCELLED
        # Buildbot's Triggerable gives up on the children it is waiting for when it stops (Buildbot issue 8197): a
        # reconfiguration that removes it (fan_out turned off) left the children running and the parent judging
        # runs not made yet. Each child request is waited for here until it is complete, as Trigger's own count is.
        await defer.gatherResults([request_complete(self.master, brid) for brid in self.brids], consumeErrors=True)
        builds = []
        for brid in self.brids:
            builds.append(await last_build(self.master, brid))  # None: cancelled before a unit took it
        return await self.gathered(builds)

    def getResultSummary(self):
        if self.ended:
            return {"step": "interrupted: its child builds are cancelled"}
        return {"step": " ".join(self.descriptionDone)}
