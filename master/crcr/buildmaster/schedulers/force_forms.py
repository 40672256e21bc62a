"""What every force form of the relay shares (force-<backend> and bisect-<backend>): it acts on its own
builders only, and its reason and priority are bounded as the backend files' fields are (Buildbot's would take a
priority its database cannot hold, a 500, and a reason of any length).

Buildbot's ForceScheduler builds on the builder of any `builderid` it is given, even one not among its own
builderNames, and its ForceBuildEndpointMatcher authorizes a force by the same computeBuilderNames: beta's
maintainer passing beta's builderid to force-alpha was allowed (as beta's maintainer) to build beta through alpha's
form, or, through bisect-alpha (which ignored the builderid), to bisect alpha. Here a request naming another
builder computes to no builder at all: no backend's rule of the Authz matches it (only the admins' does), and the
form refuses it as a field error (Buildbot's REST API answers 400 with it), so that the rule and the action always
agree on the builder.
"""

from __future__ import annotations

import re

from buildbot.plugins import schedulers, util
from buildbot.schedulers.forcesched import CollectedValidationError, ValidationError
from twisted.internet import defer

from crcr.config.errors import shown, shown_all
from crcr.config.limits import MAX_FORCE_REASON
from crcr.names import BISECTION_PRIORITY

# A forced build may go as far ahead of the queue as a bisection's steps, and as far behind.
PRIORITIES = (-BISECTION_PRIORITY, BISECTION_PRIORITY)
WHOLE_NUMBER = re.compile(r"-?[0-9]{1,9}")  # digits enough for PRIORITIES, few enough to convert at once


class OwnBuildersForceScheduler(schedulers.ForceScheduler):
    """A ForceScheduler that builds on its own builders only (see the module's docstring), with a bounded reason
    (its default `reason`) and priority (`priority`: the field, when not the default one)."""

    def __init__(self, name: str, builderNames: list[str], reason: str = "force build", priority=None, **kwargs):
        super().__init__(name=name, builderNames=builderNames, reason=ReasonParameter(reason),
                         priority=priority or PriorityParameter(), **kwargs)

    @defer.inlineCallbacks
    def computeBuilderNames(self, builderNames=None, builderid=None):
        """What the Authz's ForceBuildEndpointMatcher and Buildbot's force() ask: [] for a request naming another
        builder."""
        try:
            names = yield self.own_builders(builderNames, builderid)
        except CollectedValidationError:
            return []
        return names

    @defer.inlineCallbacks
    def force(self, owner, builderNames=None, builderid=None, **kwargs):
        yield self.own_builders(builderNames, builderid)  # the refusal, naming what is not the form's
        return (yield super().force(owner, builderNames, builderid, **kwargs))

    @defer.inlineCallbacks
    def own_builders(self, builderNames=None, builderid=None):
        """The builders a request names (by names, by id or both), all of them the form's own; the form's builders
        when it names none. CollectedValidationError, keyed by the request's field, when it names another."""
        if builderNames is not None and not (isinstance(builderNames, list)
                                             and all(isinstance(name, str) for name in builderNames)):
            raise CollectedValidationError({"builderNames": "must be a list of builder names"})
        named = list(builderNames or [])
        not_own = [name for name in named if name not in self.builderNames]
        if not_own:
            raise CollectedValidationError({"builderNames": self._not_own(shown_all(not_own))})
        if builderid is not None:
            by_id = yield self._own_builder_ids()
            if str(builderid) not in by_id:  # the UI sends it as a string
                raise CollectedValidationError({"builderid": self._not_own(f"builder id {shown(builderid)}")})
            named.append(by_id[str(builderid)])
        return sorted(set(named)) or list(self.builderNames)

    @defer.inlineCallbacks
    def _own_builder_ids(self):
        """{str(builderid): name} of the form's builders that the database knows."""
        ids = {}
        for name in self.builderNames:
            builderid = yield self.master.db.builders.findBuilderId(name, autoCreate=False)
            if builderid is not None:
                ids[str(builderid)] = name
        return ids

    def _not_own(self, what: str) -> str:
        return f"{what} is not this form's builder: {self.name} acts on {', '.join(self.builderNames)} only"


class ReasonParameter(util.StringParameter):
    """A force form's reason: text of at most MAX_FORCE_REASON characters."""

    debug = False  # a refusal is the user's to read, not a traceback for the master's log

    def __init__(self, default: str):
        super().__init__(name="reason", label="Reason", default=default, size=40)

    def parse_from_arg(self, s):
        if not isinstance(s, str):
            raise ValidationError(f"must be text, not {shown(s)}")
        if len(s) > MAX_FORCE_REASON:
            raise ValidationError(f"at most {MAX_FORCE_REASON} characters (this one has {len(s)})")
        return s


class PriorityParameter(util.IntParameter):
    """A forced build's priority: a whole number within PRIORITIES (Buildbot's database holds an INTEGER, and
    Buildbot claims the highest priority first)."""

    debug = False

    def __init__(self, **kwargs):
        super().__init__(name="priority", label="Priority (higher builds first)", default=0, **kwargs)

    def parse_from_arg(self, s):
        low, high = PRIORITIES
        text = str(s).strip() if isinstance(s, (int, str)) and not isinstance(s, bool) else ""
        if not (WHOLE_NUMBER.fullmatch(text) and low <= int(text) <= high):
            raise ValidationError(f"must be a whole number from {low} to {high}, not {shown(s)}")
        return int(text)
