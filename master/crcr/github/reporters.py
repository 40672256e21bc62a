"""GitHub commit statuses, context 'crcr/<backend>', for backends of level L2 and up."""

from __future__ import annotations

from buildbot.plugins import util
from buildbot.reporters.generators.build import BuildStartEndStatusGenerator
from buildbot.reporters.generators.buildrequest import BuildRequestGenerator
from buildbot.reporters.message import MessageFormatterFunction, MessageFormatterRenderable
from twisted.python import log

from crcr.github.statuspush import RetryingGitHubStatusPush
from crcr.config.loader import RelayConfig
from crcr.config.secretfiles import GITHUB_TOKEN, usable_secret
from crcr.config.settings import Settings
from crcr.github.status_text import describe
from crcr.names import BACKEND_PROPERTY, force_scheduler_name, status_context, upstream_scheduler_name


def github_status_reporters(relay: RelayConfig, settings: Settings) -> list:
    reporting = [b.name for b in relay.active_backends if b.reports_to_github]
    if not reporting:
        return []
    if not usable_secret(settings.secrets_dir, GITHUB_TOKEN):
        log.msg(
            f"crcr: GitHub status reporting is off: no usable secret '{GITHUB_TOKEN}' in {settings.secrets_dir} "
            f"(backends that would report: {', '.join(reporting)})"
        )
        return []
    # Only upstream and forced builds report: a bisection build's verdict (scheduler bisect-<backend>)
    # covers the few tests it ran, not its commit. Buildbot's schedulers set the 'scheduler' property this checks.
    schedulers = [name for b in reporting for name in (upstream_scheduler_name(b), force_scheduler_name(b))]
    # The repository comes from the change's `project` (settings.github_repo), set by the poller
    # and the force schedulers, so a local mirror still reports to the right repository.
    return [
        RetryingGitHubStatusPush(
            token=util.Secret(GITHUB_TOKEN),
            # The context follows the backend file's stem (a builder property), never a display name.
            context=util.Interpolate(status_context(f"%(prop:{BACKEND_PROPERTY})s")),
            baseURL=settings.github_api_url,
            generators=[
                BuildRequestGenerator(builders=reporting, schedulers=schedulers,
                                      formatter=MessageFormatterFunction(describe, "plain")),
                BuildStartEndStatusGenerator(
                    builders=reporting,
                    schedulers=schedulers,
                    start_formatter=MessageFormatterRenderable(util.Interpolate("Running on %(prop:workername)s")),
                    end_formatter=MessageFormatterFunction(describe, "plain", want_steps=True),
                ),
            ],
        )
    ]
