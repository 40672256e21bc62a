"""A re-run asked in GitHub's checks UI of the relay's own check runs: a `check_run` event `rerequested` ("Re-run" on
one check run crcr/<backend>) or a `check_suite` event `rerequested` ("Re-run all checks": every check run of the
App's suite on a commit). GitHub sends these to the App whose check runs they are only, through the App's webhook.
What a delivery asks is read here; PullRequestRelay.rerun decides what it builds.

A check run names its backend (names.status_context); its external_id, the build request it reported, is not
needed for that. GitHub lists the PRs whose head the commit is in `pull_requests`, but leaves it empty for a fork's
PR: the relay then looks for a PR it built that commit of.
"""

from __future__ import annotations

from dataclasses import dataclass

from crcr.names import status_context

RERUN_ACTION = "rerequested"
CHECK_RUN_EVENT, CHECK_SUITE_EVENT = "check_run", "check_suite"


@dataclass(frozen=True)
class Rerun:
    head_sha: str
    pull_requests: tuple[int, ...]  # as GitHub lists them: empty for a fork's PR
    app_id: int  # the App whose check runs these are
    check_run: str | None  # the name of the check run re-run; None: every one of the App's suite on head_sha
    sender: str  # who asked

    @classmethod
    def from_payload(cls, event: str, payload: dict) -> Rerun:
        """The re-run a check_run or check_suite event of a shape webhook_events checked asks for."""
        checked = payload[event]
        return cls(head_sha=checked["head_sha"], app_id=checked["app"]["id"],
                   pull_requests=tuple(pr["number"] for pr in checked.get("pull_requests") or ()),
                   check_run=checked["name"] if event == CHECK_RUN_EVENT else None,
                   sender=(payload.get("sender") or {}).get("login", ""))

    def describe(self) -> str:
        """What was asked, as the answer and the log say it."""
        what = f"check run {self.check_run}" if self.check_run is not None else "all checks"
        return f"re-run of {what} on {self.head_sha[:10]}"


def backend_of_check_run(name: str, backends: list[str]) -> str | None:
    """Which of `backends` check run `name` reports: crcr/<backend>; None when none does."""
    return next((backend for backend in backends if status_context(backend) == name), None)
