"""Each unit's record over the last 7 days (services/every_master/unit_figures.py), as JSON for the UI's Units page and
`crcr status --units`:

    GET /plugins/crcr/api/units
    {"days": 7, "units": [unit figures, by name]}
"""

from __future__ import annotations

from twisted.internet import defer

from crcr.buildmaster.services.every_master.unit_figures import DAYS, unit_figures
from crcr.buildmaster.www.bisections import JsonResource


class UnitsResource(JsonResource):
    @defer.inlineCallbacks
    def answer(self, request):
        return {"days": DAYS, "units": (yield unit_figures(self.master))}
