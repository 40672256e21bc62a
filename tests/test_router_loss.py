"""Whether a master's stop is its router's loss (buildmaster/services/every_master/router_loss.py): Buildbot's WAMP
session, a real autobahn ApplicationSession, is attached while the router serves it. A stop with the session attached
(SIGTERM) is the cluster's end-to-end test's."""

from __future__ import annotations

from types import SimpleNamespace

from autobahn.twisted.wamp import ApplicationSession

from crcr.buildmaster.services.every_master.router_loss import router_lost


def master_with(session) -> SimpleNamespace:
    return SimpleNamespace(wamp=SimpleNamespace(service=session))


def test_a_master_whose_session_ended_lost_its_router():
    assert router_lost(master_with(ApplicationSession()))


def test_a_master_that_never_joined_a_router_lost_none():
    assert not router_lost(master_with(None))  # one master alone, or a stop before the router answered
