"""What a REST API request names, checked before Buildbot's endpoints act on it: a 404 naming what is not there.

Buildbot's data API endpoints assume that what a request names exists and fits the database: a force through a
form that is not there called force() on None, a rebuild of a build that is not there subscripted None, a pause of
a worker that is not there met a typo of Buildbot's own, and an id beyond SQLite's integers overflowed; each was a
500 with Python's words for it. The relay's Authz asks these (see RelayAuthz.assertUserAllowed for why there).
"""

from __future__ import annotations

from buildbot.data.buildrequests import BuildRequestEndpoint
from buildbot.data.builds import BuildEndpoint
from buildbot.data.exceptions import InvalidPathError
from buildbot.data.forceschedulers import ForceSchedulerEndpoint
from buildbot.data.resultspec import ResultSpec
from buildbot.data.workers import WorkerEndpoint
from buildbot.schedulers.forcesched import ForceScheduler
from twisted.internet import defer

# The largest INTEGER SQLite holds: every id of Buildbot's is a key of its tables.
MAX_ID = 2**63 - 1
# What the relay's controls act on, by the endpoint that reads it.
CONTROLLED = {ForceSchedulerEndpoint: "force form", BuildEndpoint: "build", BuildRequestEndpoint: "build request",
              WorkerEndpoint: "worker"}


class NotThere(Exception):
    """A control's path names something that does not exist; the message names it."""


def data_endpoint(master, ep: tuple[str, ...]):
    """(endpoint, its arguments) of a data API path; (None, {}) for any other path (the plugin's JSON asks the
    Authz too). A number beyond any id is InvalidPathError, Buildbot's 404."""
    try:
        endpoint, kwargs = master.data.getEndpoint(ep)
    except InvalidPathError:
        return None, {}
    if any(isinstance(value, int) and abs(value) > MAX_ID for value in kwargs.values()):
        raise InvalidPathError(f"{'/'.join(ep)}: no such id (ids are below 2**63)")
    return endpoint, kwargs


@defer.inlineCallbacks
def control_target(master, endpoint, kwargs: dict, ep: tuple[str, ...]):
    """What a control of a force form, build, build request or worker acts on, as its endpoint reads it; None for
    any other endpoint. NotThere when it does not exist."""
    noun = next((noun for kind, noun in CONTROLLED.items() if isinstance(endpoint, kind)), None)
    if noun is None:
        return None
    target = yield endpoint.get(ResultSpec(), kwargs)
    if target is not None:
        return target
    if isinstance(endpoint, ForceSchedulerEndpoint):
        forms = sorted(s.name for s in master.allSchedulers() if isinstance(s, ForceScheduler))
        raise NotThere(f"no force form '{kwargs['schedulername']}' (the forms: {', '.join(forms)})")
    raise NotThere(f"no {noun} at {'/'.join(ep)}")
