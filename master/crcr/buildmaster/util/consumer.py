"""A relay service that listens to Buildbot's message queue while it runs: the leadership, the presence of units,
the host slots' waker, and (through OrderedLeaderService) the ledger and the test history."""

from __future__ import annotations

from buildbot.util import service


class MessageConsumer(service.BuildbotService):
    """Subclasses give subscriptions(); each handler is called as the queue delivers, through handling()."""

    def __init__(self, *args, **kwargs):
        self._consumers = []
        super().__init__(*args, **kwargs)

    def subscriptions(self) -> list[tuple[tuple, object]]:
        """(mq filter, handler(key, message)) of each kind of message the service handles."""
        raise NotImplementedError

    def handling(self, handler):
        """What the queue calls for `handler`'s messages: the handler itself, unless a subclass wraps it."""
        return handler

    async def startService(self):
        await super().startService()
        for key, handler in self.subscriptions():
            self._consumers.append(await self.master.mq.startConsuming(self.handling(handler), key))

    async def stopService(self):
        for consumer in self._consumers:
            consumer.stopConsuming()
        self._consumers = []
        await super().stopService()
