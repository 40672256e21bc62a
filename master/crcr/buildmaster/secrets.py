"""The secrets provider of the master: each secret read from its file when it is looked up."""

from __future__ import annotations

import os

from buildbot.secrets.providers.file import SecretInAFile


class SecretsDirectory(SecretInAFile):
    """SecretInAFile reads its whole directory once, when its own arguments change: a reconfig after
    `crcr worker register` would not know the new password, and one after a rotation would keep the old.
    Reading the directory in this provider's own reconfig would come too late (Buildbot reconfigures the workers,
    which look up their passwords, before the secrets providers), and reading it at each lookup costs units x
    hosts files per reconfig. So a lookup reads the asked entry's file alone, with SecretInAFile's permission
    check and newline strip; SecretInAFile's check of the whole directory still runs at each config load."""

    def reconfigService(self, dirname, suffixes=None, strip=True):
        self._dirname, self._suffixes, self._strip = dirname, suffixes or [""], strip

    def get(self, entry):
        for suffix in self._suffixes:
            filename = entry + suffix
            if os.path.basename(filename) != filename or filename in ("", ".", ".."):
                continue  # not an entry of the directory, so never a secret of SecretInAFile's
            try:
                self.checkFileIsReadOnly(self._dirname, filename)
                with open(os.path.join(self._dirname, filename), encoding="utf-8") as source:
                    value = source.read()
            except FileNotFoundError:
                continue
            return value.rstrip("\r\n") if self._strip else value
        return None
