"""The secrets of the master: its provider, which reads a secret's file when it is looked up, and the secret that
a worker's configuration names."""

from __future__ import annotations

import os
from pathlib import Path

from buildbot.process.properties import Secret
from buildbot.secrets.providers.file import SecretInAFile
from buildbot.util import ComparableMixin


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


class FileSecret(ComparableMixin, Secret):
    """util.Secret(name) of a file in the secrets directory, equal to the one of the previous configuration while
    the file is unchanged. Buildbot reconfigures a worker only when its configuration differs from the running
    one, and util.Secret never compares equal: each reconfig re-rendered every unit's password and re-registered
    it. With this, only the units whose password file was replaced or changed (a rotation) are reconfigured."""

    compare_attrs = ("secret_name", "file_version")

    def __init__(self, secrets_dir: Path, secret_name: str):
        super().__init__(secret_name)
        try:
            stat = (secrets_dir / secret_name).stat()
        except OSError:
            self.file_version = None
        else:
            # crcr worker register replaces the file (a new inode); an edit in place changes its time.
            self.file_version = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
