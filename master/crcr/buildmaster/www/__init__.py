"""The web UI: Buildbot's waterfall, console and grid views, and crcr's own home page (a www plugin)."""

from __future__ import annotations

from pathlib import PurePosixPath

from buildbot.plugins import util
from buildbot.plugins.db import get_plugins
from buildbot.www.plugin import Application
from twisted.web.resource import Resource

from crcr.buildmaster.auth.authentication import web_auth
from crcr.buildmaster.auth.authorization import relay_authz
from crcr.buildmaster.changes.webhook import DIALECT, github_dialect
from crcr.buildmaster.www.artifacts import ArtifactsResource
from crcr.buildmaster.www.badges import BadgesResource
from crcr.buildmaster.www.bisections import BisectionsResource
from crcr.buildmaster.www.disconnected import DisconnectedResource
from crcr.buildmaster.www.events import ReadersEventResource
from crcr.buildmaster.www.health import SummaryResource
from crcr.buildmaster.www.host_tool import HostToolResource
from crcr.buildmaster.www.junit import JunitFileResource
from crcr.buildmaster.www.metrics import MetricsResource
from crcr.buildmaster.www.nosniff import answer_with_nosniff
from crcr.buildmaster.www.quarantine import QuarantineResource
from crcr.buildmaster.www.relay import PluginConfiguration, RelayResource
from crcr.buildmaster.www.rest_errors import serve_relay_rest_api
from crcr.buildmaster.www.rest_writes import write_rest_answers_in_the_reactor
from crcr.buildmaster.www.ui_assets import serve_what_the_ui_asks_for
from crcr.buildmaster.www.units import UnitsResource
from crcr.config.loader import RelayConfig
from crcr.config.settings import Settings
from crcr.config.upstream_web import github_web_url, upstream_web_of
from crcr.names import CHILD_TAG, HOST_TOOL_PATH
from crcr.plan.builds import BuildPlan

TITLE = "crcr PyTorch relay"
PLUGIN_NAME = "crcr"
VIEW_PLUGINS = ("waterfall_view", "console_view", "grid_view")  # Buildbot's


class RelayApplication(Application):
    """The `crcr` www plugin (entry point buildbot.www in pyproject.toml): static/scripts.js replaces the home page
    and adds the bisection pages; api/bisections under the plugin's URL serves their JSON, api/disconnected the
    home page's backends with no unit connected, api/relay what they show of the relay (its configuration, a
    PluginConfiguration), api/quarantine/<backend> its flaky tests in quarantine and their moves by hand
    (www/quarantine.py); junit/ each suite's JUnit XML as the worker wrote it (www/junit.py); artifacts/ the build
    stages' artifacts, for the units (www/artifacts.py); crcr-host the host tool a lab admin fetches onto a new host
    (www/host_tool.py)."""

    def __init__(self):
        super().__init__(__name__, "crcr relay: home page and bisections")
        # Buildbot gives a plugin its master only at (re)configuration: the resources get it then.
        self.bisections = BisectionsResource(None, self._backend_names)
        self.disconnected = DisconnectedResource(None, self._backends)
        self.health = SummaryResource(None)
        self.relay = RelayResource(None, lambda: self.config.shown)
        self.junit = JunitFileResource(None)
        self.units = UnitsResource(None)
        self.quarantine = QuarantineResource(None)
        api = Resource()
        api.putChild(b"bisections", self.bisections)
        api.putChild(b"disconnected", self.disconnected)
        api.putChild(b"health", self.health)  # the health pages' JSON and charts (www/health.py)
        api.putChild(b"relay", self.relay)
        api.putChild(b"units", self.units)  # each unit's builds and hardware failures (www/units.py)
        api.putChild(b"quarantine", self.quarantine)  # each backend's flaky tests in quarantine (www/quarantine.py)
        self.resource.putChild(b"api", api)
        self.resource.putChild(b"junit", self.junit)
        self.artifacts = ArtifactsResource(None, lambda: self.config.artifact_store)
        self.resource.putChild(b"artifacts", self.artifacts)
        self.host_tool = HostToolResource()
        self.resource.putChild(PurePosixPath(HOST_TOOL_PATH).name.encode(), self.host_tool)

    def setMaster(self, master) -> None:
        super().setMaster(master)
        self.bisections.master = master
        self.disconnected.master = master
        self.health.master = master
        self.relay.master = master
        self.junit.master = master
        self.units.master = master
        self.quarantine.master = master
        self.artifacts.master = master
        put_root_resources(master)
        serve_what_the_ui_asks_for([*VIEW_PLUGINS, PLUGIN_NAME])
        serve_relay_rest_api()  # Buildbot builds /api after configuring the plugins, on its first configuration
        write_rest_answers_in_the_reactor()
        answer_with_nosniff()

    def _backends(self) -> list[dict]:
        return self.config.shown["backends"]  # see home_page_data

    def _backend_names(self) -> list[str]:
        return [b["name"] for b in self._backends()]


ep = RelayApplication()


def put_root_resources(master) -> None:
    """/badges (for READMEs) and /metrics (for Prometheus) at the web root, where their users expect them, and /sse in
    place of Buildbot's, which lets anyone read (www/events.py). Buildbot gives a plugin only /plugins/<name>: the
    root is the base app's resource (one object, the `base` www plugin WWWService loads from the same registry),
    whose children its setupSite sets. setMaster runs within its configPlugins at every (re)configuration, so ours
    are put there each time, with the master of the day.

    /sse: at start, setupSite puts Buildbot's after the plugins' setMaster, then its reconfigSite calls setMaster
    again before the port opens, so ours is the one ever served. It stays across reconfigurations: the streams'
    ids, which later requests add events to, live in it."""
    root = get_plugins("www", None, load_now=True).get("base").resource
    root.putChild(b"badges", BadgesResource(master))
    root.putChild(b"metrics", MetricsResource(master))
    events = root.children.get(b"sse")
    if not (isinstance(events, ReadersEventResource) and events.master is master):
        root.putChild(b"sse", ReadersEventResource(master))


def home_page_data(relay: RelayConfig, settings: Settings) -> dict:
    """What the UI shows of the relay (plugins/crcr/api/relay, the home page's and the bisection pages' data)."""
    upstream = upstream_web_of(settings)
    return {
        "upstream": {
            "name": upstream.name,
            "branches": list(settings.upstream_branches),
            "commit_url": upstream.commit_url,  # + a sha: the commit's web page; None: shown as its sha
        },
        "backends": [
            {"name": b.name, "level": b.level, "device": b.device, "description": b.description}
            for b in relay.backends
        ],
        # Files the master started without (see load_checked_relay_config's leave_out_invalid).
        "left_out": list(relay.left_out),
        # The tag of a fanned-out backend's child builds: the home page's links to the views leave their rows out.
        "child_tag": CHILD_TAG,
    }


GRID_REVISIONS = 30  # a user may change it in the UI's settings


def www_config(settings: Settings, relay: RelayConfig, plan: BuildPlan) -> dict:
    return {
        "port": settings.web_listen,
        # Who signs in: the users file or GitHub. Buildbot signs their session cookies with a key it keeps in the
        # database, not the secrets folder, and left there: Buildbot takes it from nowhere else, and the masters of
        # one database share sessions through it (docs/operators.md, Secrets: backups are secrets, rotation).
        "auth": web_auth(settings, github_web_url(settings)),
        # Buildbot's grid shows 5 commits by default: on a relay, where a backend builds one commit of several
        # (coalescing) and a forced old commit takes a column of its own, too few to find each backend in.
        "ui_default_config": {"Grid.revisionLimit": GRID_REVISIONS},
        "plugins": {
            **{view: {} for view in VIEW_PLUGINS},
            # Not in the frontend config, which is everyone's: see www/relay.py.
            PLUGIN_NAME: PluginConfiguration(home_page_data(relay, settings), settings.artifact_store),
        },
        # GitHub's webhooks at /change_hook/github; Buildbot's other hooks stay off.
        "change_hook_dialects": {DIALECT: github_dialect(settings, relay.active_backends)},
        "authz": relay_authz(relay, plan, settings),  # who may do what: the files' maintainers and the admins
    }


def upstream_project(settings: Settings) -> util.Project:
    """Buildbot's project of every builder, shown to anyone on its Projects page: the upstream named as the home page
    names it (a URL's user and password, where a token may be, left out)."""
    branches = ", ".join(settings.upstream_branches)
    return util.Project(
        name=settings.github_repo,
        description=f"Upstream followed by this relay: {upstream_web_of(settings).name} (branches: {branches})",
    )
