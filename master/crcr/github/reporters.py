"""GitHub commit statuses, context 'crcr/<backend>', for backends of level L2 and up; with a GitHub App, check runs
of the same name for the pull request builds of L3/L4 backends instead of their statuses. The reporters write them
to the GitHub outbox; its sender delivers them."""

from __future__ import annotations

from buildbot.plugins import util
from buildbot.reporters.generators.build import BuildStartEndStatusGenerator
from buildbot.reporters.generators.buildrequest import BuildRequestGenerator
from buildbot.reporters.message import MessageFormatterRenderable
from twisted.python import log

from crcr.config.loader import RelayConfig
from crcr.config.secretfiles import (
    GITHUB_APP_ID,
    GITHUB_APP_PRIVATE_KEY,
    GITHUB_TOKEN,
    app_configured,
    usable_secret,
)
from crcr.config.settings import Settings
from crcr.github.check_run_text import check_run_fields
from crcr.github.check_runs import GitHubCheckRuns
from crcr.github.commit_status import OutboxStatusPush
from crcr.github.formatting import FormatterWithEnding
from crcr.github.outbox_sender import OutboxSender
from crcr.github.status_text import describe, running
from crcr.names import (
    BACKEND_PROPERTY,
    force_scheduler_name,
    pull_request_scheduler_name,
    status_context,
    upstream_scheduler_name,
)


def github_status_reporters(relay: RelayConfig, settings: Settings) -> list:
    """The reporters of the backends that report to GitHub, and the outbox's sender, which delivers what they
    report."""
    reporting = [b for b in relay.active_backends if b.reports_to_github]
    if not reporting:
        return []
    # Only upstream, forced and pull request builds report: a bisection build's verdict (scheduler
    # bisect-<backend>) covers the few tests it ran, not its commit. Buildbot's schedulers set the 'scheduler'
    # property the generators check.
    commits = [name for b in reporting for name in (upstream_scheduler_name(b.name), force_scheduler_name(b.name))]
    pull_requests = [pull_request_scheduler_name(b.name) for b in reporting if b.builds_pull_requests]
    with_app = app_configured(settings.secrets_dir)
    reporters = []
    statuses = usable_secret(settings.secrets_dir, GITHUB_TOKEN)
    if statuses:
        reporters.append(_status_push(reporting, commits + ([] if with_app else pull_requests)))
    else:
        log.msg(
            f"crcr: GitHub status reporting is off: no usable secret '{GITHUB_TOKEN}' in {settings.secrets_dir} "
            f"(backends that would report: {', '.join(b.name for b in reporting)})"
        )
    check_runs = bool(with_app and pull_requests)
    if check_runs:
        reporters.append(GitHubCheckRuns(
            generators=check_run_generators([b.name for b in reporting if b.builds_pull_requests], pull_requests)))
    if not reporters:
        return []
    return [*reporters, OutboxSender(
        api_url=settings.github_api_url, retry_delay=settings.outbox_retry_delay, max_delay=settings.outbox_max_delay,
        statuses=statuses, app_id=util.Secret(GITHUB_APP_ID) if check_runs else None,
        private_key=util.Secret(GITHUB_APP_PRIVATE_KEY) if check_runs else None,
    )]


@util.renderer
def _running(props) -> str:
    return running(props.getProperty("workername"))


def _status_push(reporting: list, schedulers: list[str]) -> OutboxStatusPush:
    builders = [b.name for b in reporting]
    # describe gets why a cancelled build ended: its status says why the relay cancelled it, or who did.
    describe_build = FormatterWithEnding(describe, "plain", want_steps=True)
    # The repository comes from the change's `project` (settings.github_repo), set by the poller, the force
    # schedulers and the pull request service, so a local mirror still reports to the right repository.
    return OutboxStatusPush(
        token=None,  # the outbox's sender reads it when it posts
        # The context follows the backend file's stem (a builder property), never a display name.
        context=util.Interpolate(status_context(f"%(prop:{BACKEND_PROPERTY})s")),
        generators=[
            BuildRequestGenerator(builders=builders, schedulers=schedulers, formatter=describe_build),
            BuildStartEndStatusGenerator(
                builders=builders,
                schedulers=schedulers,
                start_formatter=MessageFormatterRenderable(_running),
                end_formatter=describe_build,
            ),
        ],
    )


def check_run_generators(builders: list[str] | None, schedulers: list[str] | None) -> list:
    """Each event of a build request of `builders` asked for by `schedulers`: the check run's fields as the
    formatter's body. The finished build's summary links each newly failing test to its suite's log (want_logs
    gives the logs' URLs, not their contents)."""
    fields = FormatterWithEnding(check_run_fields, "json")
    fields_with_logs = FormatterWithEnding(check_run_fields, "json", want_steps=True, want_logs=True)
    return [
        BuildRequestGenerator(builders=builders, schedulers=schedulers, formatter=fields),
        BuildStartEndStatusGenerator(builders=builders, schedulers=schedulers, start_formatter=fields,
                                     end_formatter=fields_with_logs),
    ]
