"""The master's secrets under Buildbot's harness: a fake master with Buildbot's SecretManager, SecretsDirectory, and
the unit workers master.cfg makes.

A reconfiguration may look up every unit's password, so what one lookup costs is multiplied by the number of
units. Which files are read is seen through Python's audit hook on open().
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from buildbot.config.errors import ConfigErrors
from buildbot.process.properties import Properties, Secret
from buildbot.secrets.manager import SecretManager
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.worker import Worker
from twisted.internet import defer
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.auth.secrets import SecretsDirectory
from crcr.buildmaster.process.workers import make_workers
from crcr.cli.registry import new_password
from crcr.config.loader import load_checked_relay_config
from crcr.config.secretfiles import worker_password

# Audit hooks cannot be removed: this one records only inside opened_files().
_opened: list[str] | None = None


def _record_open(event: str, args: tuple) -> None:
    if event == "open" and _opened is not None and isinstance(args[0], (str, Path)):
        _opened.append(str(args[0]))


sys.addaudithook(_record_open)


@contextmanager
def opened_files(directory: Path):
    """The files under `directory` opened in the block, in order."""
    global _opened
    _opened = opened = []
    try:
        yield opened
    finally:
        _opened = None
        opened[:] = [p for p in opened if Path(p).parent == directory]


class SecretsDirectoryTest(TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        root = Path(tempfile.mkdtemp(prefix="crcr-secrets-"))  # trial's mktemp() writes under the current directory
        self.addCleanup(shutil.rmtree, root)
        self.dirs = make_dirs(root)
        self.settings = settings_for(self.dirs)
        write_backend(self.dirs.backends, "demo-backend", device="demo")
        for host in [f"lab-{n:02}" for n in range(20)]:
            write_worker(self.dirs.workers, host, devices={"demo": 2})
            write_worker_password(self.dirs.secrets, host, value=f"pw-{host}\n")
        self.master = yield fakemaster.make_master(self, wantData=True)
        self.secrets = SecretManager()
        yield self.secrets.setServiceParent(self.master)
        yield self.secrets.reconfigServiceWithBuildbotConfig(self.config())
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def config(self) -> SimpleNamespace:
        """What a (re)configuration hands Buildbot's SecretManager: a new provider with the same arguments."""
        return SimpleNamespace(secretsProviders=[SecretsDirectory(dirname=str(self.dirs.secrets))])

    @property
    def provider(self) -> SecretsDirectory:
        return self.secrets.namedServices[SecretsDirectory.name]

    def units(self) -> dict[str, Worker]:
        """The unit workers of the files as they are now, as master.cfg makes them."""
        return {w.name: w for w in make_workers(load_checked_relay_config(self.settings), self.settings.secrets_dir)}

    @defer.inlineCallbacks
    def start_units(self):
        running = self.units()
        for worker in running.values():
            yield worker.setServiceParent(self.master.workers)
        return running

    @defer.inlineCallbacks
    def reconfigure(self, running: dict[str, Worker], configured: dict[str, Worker]):
        """A master's reconfiguration to the `configured` units, in Buildbot's order: the workers first (each
        renders its password if its configuration changed), then the secrets providers (both have priority 127,
        and the master added its workers service first)."""
        for name, sibling in configured.items():
            if name in running:
                yield running[name].reconfigServiceWithSibling(sibling)
            else:
                yield sibling.setServiceParent(self.master.workers)
                running[name] = sibling
        yield self.secrets.reconfigServiceWithBuildbotConfig(self.config())

    def lookup(self, name: str) -> defer.Deferred:
        properties = Properties()
        properties.master = self.master
        return properties.render(Secret(name))

    @defer.inlineCallbacks
    def test_a_lookup_reads_only_the_asked_secrets_file_however_many_the_directory_holds(self):
        with opened_files(self.dirs.secrets) as opened:
            password = yield self.lookup(worker_password("lab-07"))

        self.assertEqual(password, "pw-lab-07")
        self.assertEqual(opened, [str(self.dirs.secrets / worker_password("lab-07"))])

    @defer.inlineCallbacks
    def test_a_reconfiguration_reads_only_the_passwords_that_changed(self):
        running = yield self.start_units()
        rotated = new_password(self.settings, "lab-03")  # what `crcr worker register --rotate-password` writes

        configured = self.units()  # loading the files reads every password (crcr check's checks)
        with opened_files(self.dirs.secrets) as opened:
            yield self.reconfigure(running, configured)

        self.assertEqual(opened, [str(self.dirs.secrets / worker_password("lab-03"))] * 2, "one per unit of lab-03")
        self.assertEqual({w.password for name, w in running.items() if name.startswith("lab-03-")}, {rotated})
        self.assertEqual(running["lab-04-demo-1"].password, "pw-lab-04")

    @defer.inlineCallbacks
    def test_a_rotated_password_and_a_new_hosts_password_are_seen_at_the_next_reconfiguration(self):
        running = yield self.start_units()
        self.assertEqual(running["lab-03-demo-0"].password, "pw-lab-03")

        rotated = new_password(self.settings, "lab-03")
        write_worker(self.dirs.workers, "lab-new", devices={"demo": 1})
        added = new_password(self.settings, "lab-new")  # what `crcr worker register` writes for a new host
        yield self.reconfigure(running, self.units())

        self.assertEqual(running["lab-03-demo-0"].password, rotated)
        self.assertEqual(running["lab-new-demo-0"].password, added)

    def test_values_are_read_as_secretinafile_reads_them(self):
        write_worker_password(self.dirs.secrets, "crlf", value="pw-crlf\r\n\r\n")

        self.assertEqual(self.provider.get(worker_password("crlf")), "pw-crlf")
        self.assertIsNone(self.provider.get("no-such-secret"))
        # Only the directory's own entries are secrets, as when SecretInAFile lists it.
        for outside in (f"../{self.dirs.secrets.name}/{worker_password('lab-01')}", "/etc/hostname", "", ".", ".."):
            self.assertIsNone(self.provider.get(outside), outside)

    @defer.inlineCallbacks
    def test_a_secret_made_readable_by_others_since_the_configuration_was_loaded_is_refused(self):
        (self.dirs.secrets / worker_password("lab-05")).chmod(0o644)

        with self.assertRaises(ConfigErrors) as raised:
            yield self.lookup(worker_password("lab-05"))

        self.assertIn(f"file {worker_password('lab-05')} are too open", raised.exception.errors[0])
