"""The shapes of the GitHub events the webhook receiver acts on: the fields crcr reads, with their JSON types (GitHub
sends many more, which are ignored). A signed delivery of another shape is refused with 400 naming the field before
anything reads it: the handlers would fail on it, and GitHub redelivers a delivery answered 500.

Fields the relay does without may be absent, or null where the handlers take null as absent; a field present is of
its type, strictly (a string is no number, a number no boolean)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DISPATCH_EVENT = "repository_dispatch"


class Shape(BaseModel):
    model_config = ConfigDict(strict=True)


class Repository(Shape):
    full_name: str | None = None


class Account(Shape):
    login: str = ""


class Label(Shape):
    name: str


class Push(Shape):
    ref: str | None = None
    before: str | None = None
    after: str | None = None
    deleted: bool | None = None
    repository: Repository | None = None


class Head(Shape):
    sha: str
    ref: str | None = None


class Base(Shape):
    ref: str
    sha: str


class PullRequest(Shape):
    number: int
    head: Head
    base: Base
    draft: bool | None = None
    labels: list[Label] | None = None
    user: Account | None = None
    author_association: str = "NONE"
    merged: bool | None = None
    state: str = "open"
    html_url: str = ""
    title: str = ""


class PullRequestEvent(Shape):
    action: str | None = None
    number: int | None = None
    pull_request: PullRequest
    label: Label | None = None  # the label added or removed (labeled, unlabeled)
    sender: Account | None = None
    repository: Repository | None = None


class App(Shape):
    id: int


class PullRequestNumber(Shape):
    """An item of a check run's or suite's `pull_requests`: GitHub's short form of a PR whose head is its commit."""

    number: int


class CheckRun(Shape):
    name: str
    head_sha: str
    external_id: str | None = None
    app: App
    pull_requests: list[PullRequestNumber] | None = None


class CheckRunEvent(Shape):
    action: str | None = None
    check_run: CheckRun
    sender: Account | None = None
    repository: Repository | None = None


class CheckSuite(Shape):
    head_sha: str
    app: App
    pull_requests: list[PullRequestNumber] | None = None


class CheckSuiteEvent(Shape):
    action: str | None = None
    check_suite: CheckSuite
    sender: Account | None = None
    repository: Repository | None = None


class Relayed(Shape):
    """client_payload of PyTorch's relay's repository_dispatch: the upstream event's name, its X-GitHub-Delivery
    id, and its whole payload (whose shape is its event's)."""

    event_type: str
    delivery_id: str = Field(min_length=1)
    payload: dict


class Dispatch(Shape):
    client_payload: Relayed
    repository: Repository | None = None


SHAPES: dict[str, type[Shape]] = {"push": Push, "pull_request": PullRequestEvent, "check_run": CheckRunEvent,
                                  "check_suite": CheckSuiteEvent, DISPATCH_EVENT: Dispatch}

# What each of pydantic's type errors expected, in JSON's words.
EXPECTED = {
    "model_type": "an object", "dict_type": "an object", "string_type": "a string", "int_type": "a whole number",
    "bool_type": "true or false", "list_type": "an array",
}


def shape_problem(event: str, payload: dict, within: str = "") -> str | None:
    """What is wrong with the shape of `payload`, an `event` event ('pull_request.head: expected an object, got a
    string', one line per field), its fields named from `within` ('client_payload.payload'); None when it is right,
    or the relay has no shape for the event (it does not use it)."""
    shape = SHAPES.get(event)
    if shape is None:
        return None
    try:
        shape.model_validate(payload)
    except ValidationError as e:
        return "\n".join(_field_problem(error, within) for error in e.errors())
    return None


def _field_problem(error, within: str) -> str:
    path = within
    for part in error["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f"{'.' if path else ''}{part}"
    kind = error["type"]
    if kind == "missing":
        return f"{path}: missing"
    if kind == "string_too_short":
        return f"{path}: must not be empty"
    if kind in EXPECTED:
        return f"{path}: expected {EXPECTED[kind]}, got {_json_type(error['input'])}"
    return f"{path}: {error['msg']}"


def _json_type(value) -> str:
    """A value's JSON type, with its article: what a message says of it (the value itself is not echoed)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
