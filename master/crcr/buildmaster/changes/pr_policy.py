"""What a pull_request event means for one backend, by its level (PyTorch's allowlist levels), its label and who
wrote the PR. Pure: the PullRequestRelay service acts on the Decision.

- L1/L2 never build PRs.
- L3 builds a PR that carries the backend's label, from the moment the label is added.
- L4 builds every PR that is not a draft.
- A PR from an author GitHub does not count as trusted (author_association, e.g. a first-time contributor from a
  fork) runs code from anyone on a lab's machine: it builds only when someone with write access to the upstream
  repository adds the backend's label (GitHub lets the triage role label too: the service asks GitHub who the
  labeler is), and a later push to it waits for the label to be added again.
"""

from __future__ import annotations

from dataclasses import dataclass

from crcr.config.backend import PULL_REQUEST_LEVELS
from crcr.names import pull_request_ref
from crcr.suites.results import SHORT_SHA

# The actions that put a (possibly new) head in front of the backends.
HEAD_ACTIONS = ("opened", "reopened", "synchronize", "ready_for_review")


@dataclass(frozen=True)
class PullRequest:
    number: int
    head_sha: str
    draft: bool
    labels: frozenset[str]
    author: str
    author_association: str
    merged: bool
    open: bool
    url: str
    title: str
    base_branch: str
    base_sha: str

    @classmethod
    def from_payload(cls, payload: dict) -> PullRequest:
        pr = payload["pull_request"]
        return cls(
            number=int(pr["number"]), head_sha=pr["head"]["sha"], draft=bool(pr.get("draft")),
            labels=frozenset(label["name"] for label in pr.get("labels") or []),
            author=(pr.get("user") or {}).get("login", ""), author_association=pr.get("author_association", "NONE"),
            merged=bool(pr.get("merged")), open=pr.get("state", "open") == "open", url=pr.get("html_url", ""),
            title=pr.get("title", ""),
            base_branch=pr["base"]["ref"], base_sha=pr["base"]["sha"],
        )

    @property
    def ref(self) -> str:
        return pull_request_ref(self.number)

    def as_property(self) -> dict:
        """The build property names.PULL_REQUEST_PROPERTY."""
        return {"number": self.number, "url": self.url, "title": self.title, "author": self.author,
                "author_association": self.author_association, "head_sha": self.head_sha,
                "base_branch": self.base_branch, "base_sha": self.base_sha}


@dataclass(frozen=True)
class BackendRules:
    name: str
    level: str
    label: str
    trusted_associations: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    build: bool = False
    # Cancel this PR's queued and running builds (of heads other than the PR's current one when `build`),
    # for this reason, which their final status shows.
    cancel: str | None = None
    cancel_other_heads_only: bool = False
    # A pending status on the head: why nothing builds yet.
    waiting: str | None = None
    # Build only if the event's sender (who added the label) has write access: the author is not trusted.
    labeler_must_write: bool = False


NOTHING = Decision()


def decide(backend: BackendRules, action: str, pr: PullRequest, label: str | None = None) -> Decision:
    """`label`: the label added or removed by a labeled/unlabeled event."""
    if backend.level not in PULL_REQUEST_LEVELS:
        return NOTHING
    if action == "closed":
        return Decision(cancel="Merged" if pr.merged else "Closed")
    if not pr.open:
        return NOTHING  # e.g. a label added to a closed PR
    trusted = pr.author_association in backend.trusted_associations
    labeled = backend.label in pr.labels
    wanted = labeled if backend.level == "L3" else (labeled or not pr.draft)
    if action == "labeled":
        # Adding the label is someone with access to the repository asking for this head to be built.
        if label != backend.label:
            return NOTHING
        return Decision(build=True, cancel=superseded(pr), cancel_other_heads_only=True, labeler_must_write=not trusted)
    if action == "unlabeled":
        if label != backend.label or (backend.level == "L4" and trusted and not pr.draft):
            return NOTHING
        return Decision(cancel=f"Label {backend.label} removed")
    if action == "converted_to_draft":
        return NOTHING if backend.level == "L3" or labeled else Decision(cancel="Converted to draft")
    if action not in HEAD_ACTIONS:
        return NOTHING
    supersede = superseded(pr) if action == "synchronize" else None
    if not wanted:
        return Decision(cancel=supersede, cancel_other_heads_only=True) if supersede else NOTHING
    if trusted:
        return Decision(build=True, cancel=supersede, cancel_other_heads_only=True)
    # The label approved an earlier head (or was there when the PR was reopened): it must be added again.
    return Decision(cancel=supersede, cancel_other_heads_only=True, waiting=waiting_for_label(backend, labeled))


def waiting_for_label(backend: BackendRules, again: bool = False) -> str:
    return f"Waiting for a maintainer to add {backend.label} {'again ' if again else ''}(PR author not trusted)"


def superseded(pr: PullRequest) -> str:
    return f"Superseded by {pr.head_sha[:SHORT_SHA]}"


def rerun_refusal(backend: BackendRules, pr: PullRequest, sha: str) -> str | None:
    """Why a re-run asked in GitHub's checks UI of `backend`'s check run on commit `sha` builds nothing, `pr` being
    the PR as GitHub describes it now; None when it builds: the rules of a push to the PR hold, and the commit must
    still be its head. An untrusted author's head builds only while it carries the label, and only when the one who
    asked may write upstream (the service asks GitHub, as for a label)."""
    if backend.level not in PULL_REQUEST_LEVELS:
        return f"{backend.name} is {backend.level}: it builds no pull request"
    if not pr.open:
        return f"PR #{pr.number} is {'merged' if pr.merged else 'closed'}"
    if pr.head_sha != sha:
        return f"{sha[:SHORT_SHA]} is no longer the head of PR #{pr.number} (now {pr.head_sha[:SHORT_SHA]})"
    labeled = backend.label in pr.labels
    if backend.level == "L3" and not labeled:
        return f"PR #{pr.number} does not carry {backend.label}"
    if pr.draft and not labeled:
        return f"PR #{pr.number} is a draft"
    if pr.author_association not in backend.trusted_associations and not labeled:
        return f"PR #{pr.number} does not carry {backend.label}, which an untrusted author's PR needs"
    return None
