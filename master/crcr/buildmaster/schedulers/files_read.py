"""What a scheduler read of the relay's files, taken anew at each reconfig."""

from __future__ import annotations

from typing import ClassVar


class FilesRead:
    """Mixed into a scheduler that keeps, beside Buildbot's own arguments, what it read of the relay's files (a
    backend's suites, its branches, the settings). Buildbot keeps a scheduler across a reconfig and hands only its own
    arguments to reconfigService (when they changed at all), so these would stay as the master's start read them:
    each is taken from the new configuration's scheduler instead, its sibling."""

    files_read: ClassVar[tuple[str, ...]] = ()  # the attributes

    def reconfigServiceWithSibling(self, sibling):
        for name in self.files_read:
            setattr(self, name, getattr(sibling, name))
        return super().reconfigServiceWithSibling(sibling)
