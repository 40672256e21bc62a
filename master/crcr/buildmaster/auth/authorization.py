"""Who may do what in the UI and the REST API: Buildbot's Authz, generated from the backend and worker host files
and the settings.

- reading: everyone, or every signed-in user with settings.require_sign_in;
- force (its `force-<backend>` and `bisect-<backend>` forms), rebuild, stop a build, cancel a build request on a
  backend's builder: the backend's maintainers; stop or cancel its child builds (a fanned-out backend's) too;
- pause, unpause, stop (gracefully) and kill a unit worker: its host's maintainers (the worker file's
  `maintainers`);
- the relay's admins (settings.admins) may do all of it, and they alone anything else (scheduler enable, ...).

Buildbot reads the rules in order and the first rule that matches an endpoint decides, unless the user lacks its
role and the rule says defaultDeny=False: then the next matching rule decides. Matching no rule allows.
"""

from __future__ import annotations

from buildbot.data.buildrequests import BuildRequestEndpoint
from buildbot.data.builds import BuildEndpoint
from buildbot.data.exceptions import InvalidPathError
from buildbot.util import bytes2unicode, unicode2bytes
from buildbot.www.authz import Authz, Forbidden
from buildbot.www.authz.endpointmatchers import (
    AnyControlEndpointMatcher,
    AnyEndpointMatcher,
    EndpointMatcherBase,
    ForceBuildEndpointMatcher,
    Match,
    RebuildBuildEndpointMatcher,
    StopBuildEndpointMatcher,
)
from buildbot.www.authz.roles import RolesFromBase
from twisted.internet import defer

from crcr.buildmaster.auth.request_targets import NotThere, control_target, data_endpoint
from crcr.config.loader import RelayConfig
from crcr.config.settings import Settings
from crcr.plan.builds import BuildPlan
from crcr.store.service import relay_store

ADMIN_ROLE = "admin"
SIGNED_IN_ROLE = "signed-in"
STOP_ACTIONS = ("stop", "cancel")  # a build's and a build request's


def maintainer_role(backend: str) -> str:
    return f"maintainer:{backend}"


def host_role(host: str) -> str:
    return f"host:{host}"


def relay_authz(relay: RelayConfig, plan: BuildPlan, settings: Settings) -> RelayAuthz:
    """www["authz"]."""
    rules = [AnyControlEndpointMatcher(role=ADMIN_ROLE, defaultDeny=False)]
    for backend in relay.backends:
        role = maintainer_role(backend.name)
        rules += [
            # A force form matches by the builders it acts on, its own only (force_forms.py): bisect-<backend> too.
            ForceBuildEndpointMatcher(builder=backend.name, role=role),
            RebuildBuildEndpointMatcher(builder=backend.name, role=role),
        ]
    # Each builder of the plan (its builds, its waiting requests) and the virtual builders its builds show under (a
    # fanned-out backend's children, docs/build-graph.md), to the maintainers the plan names: stopping a child needs
    # the right to stop its parent.
    rules += [StopOrCancelEndpointMatcher(builder=name, role=maintainer_role(backend))
              for row in plan for backend in row.stopped_by for name in (row.name, *row.shown_under)]
    rules += [WorkerActionEndpointMatcher([unit.worker_name for unit in host.units], role=host_role(host.name))
              for host in relay.hosts]
    rules.append(AnyControlEndpointMatcher(role=ADMIN_ROLE))
    if settings.require_sign_in:
        rules.append(AnyEndpointMatcher(role=SIGNED_IN_ROLE))
    return RelayAuthz(allowRules=rules, roleMatchers=[RolesFromRelayFiles(relay, settings)])


class RolesFromRelayFiles(RolesFromBase):
    """A signed-in user's roles: signed-in, admin if settings.admins names them, maintainer:<backend> and
    host:<host> for each backend and worker file whose `maintainers` name them.

    Buildbot's RolesFromUsername compares names exactly: right for the users file, whose names are as typed, but
    GitHub logins are not case-sensitive (GitHub gives the login as its owner spells it, Octocat, where a file may
    say octocat), so with auth: github names are compared case-insensitively."""

    def __init__(self, relay: RelayConfig, settings: Settings):
        super().__init__()
        self.same_login = str.lower if settings.auth == "github" else str  # str: the name as it is
        self.roles: dict[str, set[str]] = {}
        named = [(settings.admins, ADMIN_ROLE)]
        named += [(b.maintainers, maintainer_role(b.name)) for b in relay.backends]
        named += [(h.maintainers, host_role(h.name)) for h in relay.hosts]
        for logins, role in named:
            for login in logins:
                self.roles.setdefault(self.same_login(login), set()).add(role)

    def getRolesFromUser(self, userDetails: dict) -> list[str]:
        username = userDetails.get("username")
        if not username:  # anonymous
            return []
        return [SIGNED_IN_ROLE, *sorted(self.roles.get(self.same_login(username), ()))]


class StopOrCancelEndpointMatcher(StopBuildEndpointMatcher):
    """Stopping a build, and cancelling a build request, of the builder. Buildbot 4.3's UI and REST API cancel a
    request with the action 'cancel', but its StopBuildEndpointMatcher matches only 'stop' there (an older name
    that BuildRequestEndpoint no longer accepts): alone, it would leave a maintainer's cancel to the admins' rule."""

    match_BuildRequestEndpoint_cancel = StopBuildEndpointMatcher.match_BuildRequestEndpoint_stop


class WorkerActionEndpointMatcher(EndpointMatcherBase):
    """Pausing, unpausing, stopping and killing one of the named workers. Buildbot has no endpoint matcher for
    workers at all (only AnyControlEndpointMatcher, which cannot tell one worker from another)."""

    def __init__(self, workers: list[str], **kwargs):
        self.workers = frozenset(workers)
        super().__init__(**kwargs)

    async def _match_worker(self, epobject, epdict, options):
        worker = await epobject.get({}, epdict)
        return Match(self.master) if worker is not None and worker["name"] in self.workers else None

    # One name per action of WorkerEndpoint.control: EndpointMatcherBase looks for match_<endpoint class>_<action>,
    # and a match_WorkerEndpoint for every action would also match reading a worker.
    match_WorkerEndpoint_pause = match_WorkerEndpoint_unpause = _match_worker
    match_WorkerEndpoint_stop = match_WorkerEndpoint_kill = _match_worker


class RelayAuthz(Authz):
    """Buildbot's Authz, whose refusals say who asked, and which notes who stopped a build or cancelled a build
    request so that its final GitHub status names them ('Cancelled by octocat').

    Why here: this is the one place Buildbot hands over both the endpoint and the signed-in user. What Buildbot
    passes on to the stop itself is a free-text reason (the UI sends none: 'no reason'), and a request cancelled
    before a worker claimed it keeps no reason at all. The note goes to the relay's store before the stop is done,
    so that the reporter of whichever master runs the build reads it, also after a restart."""

    def assertUserAllowed(self, ep, action, options, userDetails) -> defer.Deferred:
        """Also a 404 naming what a request names that is not there (request_targets.py). Why here: Buildbot's REST
        API asks the Authz before it looks the endpoint up (rest.py getEndpoint), inside the error handling that
        answers an InvalidPathError with a 404, and nothing of the relay's runs before its endpoints otherwise;
        replacing the endpoints would mean patching Buildbot's data connector. A Deferred, as Buildbot's: the
        relay's readers chain on it (www/readers.py)."""
        return defer.ensureDeferred(self._assert_user_allowed(ep, action, options, userDetails))

    async def _assert_user_allowed(self, ep, action, options, userDetails):
        username = userDetails.get("username")
        endpoint, kwargs = data_endpoint(self.master, ep)
        target = None
        if endpoint is not None and bytes2unicode(action).lower() != "get":
            target = await self._control_target(ep, endpoint, kwargs, userDetails)
        try:
            await super().assertUserAllowed(ep, action, options, userDetails)
        except Forbidden as refused:
            who = f"signed in as {username}" if username else "not signed in"
            raise Forbidden(unicode2bytes(f"{who}: {bytes2unicode(refused.message)}")) from None
        if action in STOP_ACTIONS and username and isinstance(endpoint, (BuildEndpoint, BuildRequestEndpoint)) \
                and target is not None:
            store = relay_store(self.master)
            await store.note_canceller(target["buildrequestid"], username, self.master.reactor.seconds())

    async def _control_target(self, ep, endpoint, kwargs, userDetails):
        """What the control acts on (None: not one the relay looks up); a 404 when it is not there, for a user who
        may read it (with require_sign_in, an anonymous one learns nothing: the rules refuse them)."""
        try:
            return await control_target(self.master, endpoint, kwargs, ep)
        except NotThere as missing:
            try:
                await super().assertUserAllowed(ep, "get", {}, userDetails)
            except Forbidden:
                return None
            raise InvalidPathError(str(missing)) from None
