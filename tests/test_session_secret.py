"""The UI's session key, as docs/operators.md (Security) tells it: Buildbot keeps it in the database, so that it
outlives a restart and every master of one database shares it, and the statement the docs give rotates it.

Buildbot's own web service makes the key (WWWService.makeSessionSecret, which it runs at every start and reconfig)
on Buildbot's real database schema."""

from __future__ import annotations

import re

from buildbot.test.reactor import TestReactorMixin
from buildbot.www.service import BuildbotSite, WWWService
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import Resource

from crcr.config.settings import REPO_ROOT
from relaymaster import relay_master

OPERATORS_DOC = REPO_ROOT / "docs" / "operators.md"


def documented_rotation() -> str:
    """The SQL statement docs/operators.md gives to rotate the key."""
    found = re.findall(r"```sql\n(.*?)```", OPERATORS_DOC.read_text(encoding="utf-8"), re.S)
    assert len(found) == 1, "docs/operators.md gives no (or more than one) SQL statement to rotate the session key"
    return found[0]


class SessionSecretTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await relay_master(self, prefix="crcr-session-")

    @defer.inlineCallbacks
    def session_secret(self):
        """The key a master's web service signs sessions with, once it has started or reconfigured."""
        www = WWWService()
        www.parent = self.master  # its master, as a started master's www service has it (not started here)
        www.site = BuildbotSite(Resource(), logPath=None, rotateLength=0, maxRotatedFiles=0)
        yield www.makeSessionSecret()
        return www.site.session_secret

    @defer.inlineCallbacks
    def test_the_key_outlives_a_restart_and_every_master_of_the_database_shares_it(self):
        first = yield self.session_secret()
        again = yield self.session_secret()

        self.assertEqual(first, again)
        stored = "SELECT value_json FROM object_state WHERE name = 'session_secret'"
        rows = yield self.master.db.pool.do(lambda conn: conn.exec_driver_sql(stored).all())
        self.assertEqual(rows, [(f'"{first}"',)], "kept in the database, which a backup holds")

    @defer.inlineCallbacks
    def test_the_documented_statement_rotates_the_key_at_the_next_reconfig(self):
        before = yield self.session_secret()

        yield self.master.db.pool.do(lambda conn: (conn.exec_driver_sql(documented_rotation()), conn.commit()))
        after = yield self.session_secret()

        self.assertNotEqual(after, before)
        self.assertEqual(len(after), len(before))
