"""Buildbot's fake master holding the relay's services, for the unit tests of pieces that find them on the master
(the plugin's resources, the history recorder, the janitor), and the crcr plugin's resources asked on it."""

from __future__ import annotations

import shutil
import tempfile

from buildbot.plugins.db import get_plugins
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.util.www import FakeRequest
from buildbot.util import service
from twisted.internet import defer
from twisted.web.resource import getChildForRequest

from crcr.buildmaster.changes.upstream_mirror import UpstreamMirror
from crcr.buildmaster.services.every_master.leadership import RelayLeadership
from crcr.buildmaster.www import RelayApplication
from crcr.buildmaster.www.relay import PluginConfiguration


async def hold_services(master, *services) -> None:
    """Give `master` a service manager holding `services`: where a real master keeps the configured services, and
    where the relay's pieces look them up (the plugin its store and RelayHealth, the recorder its store)."""
    master.service_manager = service.BuildbotServiceManager()
    await master.service_manager.setServiceParent(master)
    for relay_service in services:
        await relay_service.setServiceParent(master.service_manager)


async def mirror_on(master, upstream_url: str, branches=("main",), also=()) -> UpstreamMirror:
    """`master` holding its copy of upstream, started (no repository yet: it is made on first need), and the
    services `also`."""
    mirror = UpstreamMirror(upstream_url=upstream_url, branches=list(branches))
    await hold_services(master, mirror, *also)
    await master.service_manager.startService()
    return mirror


# The master (fakedb.Master) running the builds of Buildbot's ReporterTestMixin.
REPORTER_MASTER_ID = 92


def leadership() -> RelayLeadership:
    """The relay's leadership, beside the store on a master alone: it takes the lead at its start, and the services
    acting only on the leader (LeaderDuty) act."""
    return RelayLeadership(takeover_after=75)


async def relay_master(testcase, *services, prefix: str, rows=()):
    """A started fake master with a real SQLite database (the store's tables need one) in a temporary basedir,
    holding `services`, its database holding its Master row and `rows`; stopped and removed at the test's end."""
    basedir = tempfile.mkdtemp(prefix=prefix)  # trial's mktemp() writes under the current directory
    testcase.addCleanup(shutil.rmtree, basedir, True)
    master = await fakemaster.make_master(testcase, wantData=True, db_url="sqlite:///state.sqlite", basedir=basedir)
    await hold_services(master, *services)
    await master.db.insert_test_data([fakedb.Master(id=fakedb.FakeDBConnector.MASTER_ID), *rows])
    testcase.addCleanup(master.stopService)
    await master.startService()
    return master


def www_root():
    """The root WWWService serves: the base www plugin's resource, where the crcr plugin's setMaster puts its own."""
    return get_plugins("www", None, load_now=True).get("base").resource


def relay_plugin(master, backends: list[dict]) -> RelayApplication:
    """The crcr plugin configured with `backends` on `master`, as Buildbot's configPlugins sets it up."""
    app = RelayApplication()
    app.setConfiguration(PluginConfiguration({"backends": backends}))
    app.setMaster(master)
    return app


@defer.inlineCallbacks
def render(resource, path: str, headers: dict[bytes, bytes] | None = None):
    """GET `path` from `resource` with the request `headers` (names in lower case), routed as Twisted routes it: the
    request (its code and headers) and the body."""
    request = FakeRequest(path.encode())
    request.input_headers.update(headers or {})
    getChildForRequest(resource, request).render(request)
    body = yield request.deferred
    return request, body


async def another_relay_master(testcase, first, *services, prefix: str):
    """A second started fake master on `first`'s database (made by relay_master): another master of the cluster, or
    `first` after a restart, holding `services`. Its database is neither cleaned nor upgraded: it is first's."""
    basedir = tempfile.mkdtemp(prefix=prefix)
    testcase.addCleanup(shutil.rmtree, basedir, True)
    master = await fakemaster.make_master(testcase, wantData=True, basedir=basedir, auto_upgrade=False,
                                          auto_clean=False, db_url=f"sqlite:///{first.basedir}/state.sqlite")
    await hold_services(master, *services)
    testcase.addCleanup(master.stopService)
    await master.startService()
    return master
