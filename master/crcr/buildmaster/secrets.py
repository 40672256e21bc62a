"""The secrets provider of the master: the secrets directory, read afresh at each (re)configuration."""

from __future__ import annotations

from buildbot.secrets.providers.file import SecretInAFile


class SecretsDirectory(SecretInAFile):
    """SecretInAFile reads its directory only when its own arguments change, so a reconfig after
    `crcr worker register` would not know the new password, and one after a rotation would keep the old.
    This one reads the directory at each lookup; lookups happen at (re)configuration, not per request."""

    def reconfigService(self, dirname, suffixes=None, strip=True):
        self._suffixes, self._strip = suffixes or [""], strip
        return super().reconfigService(dirname, suffixes=suffixes, strip=strip)

    def get(self, entry):
        return self.loadSecrets(self._dirname, suffixes=self._suffixes, strip=self._strip).get(entry)
