"""A formatter whose function also gets the master: the texts of a cancelled pull request build read why the relay
cancelled it through the master (buildmaster/pull_requests.cancel_reason). Buildbot's MessageFormatterFunction
hands its function only the build; its buildAdditionalContext hook is where a formatter adds to that."""

from __future__ import annotations

from buildbot.reporters.message import MessageFormatterFunction


class FormatterWithMaster(MessageFormatterFunction):
    def buildAdditionalContext(self, master, ctx):
        ctx["master"] = master
