"""Every master of several: its process ends, non-zero, when the master stops while the process runs on.

Buildbot's WAMP connector stops the master when the router goes away (wamp/connector.py onLeave: it cannot resume
its subscriptions, so it gives up), but nothing ends the process: its ports closed, it looks alive to systemd or
compose, which never restart it. A master that stops with its WAMP session gone lost its router (a master stopped
by SIGTERM, crcr master stop, is still attached while its services stop), and this service then ends the process
with EXIT_MASTER_LOST for its supervisor to start it again, once the router is back.
"""

from __future__ import annotations

import os

from buildbot.util import service
from twisted.python import log

EXIT_MASTER_LOST = 75  # EX_TEMPFAIL: try again later (the router back)


class ExitWithTheMaster(service.BuildbotService):
    name = "crcr-exit-with-the-master"

    def stopService(self):
        reactor = self.master.reactor
        if router_lost(self.master):
            log.msg(f"crcr: the master stopped, its message queue's router gone; the process exits with "
                    f"{EXIT_MASTER_LOST} for its supervisor to start it again")
            pidfile = os.path.join(self.master.basedir, "twistd.pid")
            reactor.addSystemEventTrigger("after", "shutdown", _exit, pidfile)
            reactor.callLater(0, reactor.stop)
        return super().stopService()


def router_lost(master) -> bool:
    """Whether the master's session with the router has ended (Buildbot's WampConnector then stops the master)."""
    session = master.wamp.service  # Buildbot's MasterService, an autobahn ApplicationSession, once it joined
    return session is not None and not session.is_attached()


def _exit(pidfile: str) -> None:
    # After the shutdown, where twistd would remove its pid file and exit 0.
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    os._exit(EXIT_MASTER_LOST)
