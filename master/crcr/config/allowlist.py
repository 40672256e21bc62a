"""PyTorch's allowlist of downstream repositories (its .github/allowlist.yml): the level upstream grants each
repository, and the PR label of an L3 one. The loader refuses a backend above its repository's grant.

Two syntaxes are in use. The current one:

    L1:
      - org1/repo1
    L2:
      - org2/repo2
    L3:
      <LABEL_NAME>:
        org3/repo3: [oncall1, oncall2]
    L4:
      - org4/repo4: [oncall1, oncall2]

and the older one, where every level is a list and an entry may carry its oncalls as text:
`- org/repo: @oncall1,oncall2`. The oncalls are not used here.

An entry may also say what it takes part in (RFC-0056, pytorch/pytorch PR #197864): a mapping with `events`,

    L2:
      - org5/nightly-only:
          events: [nightly]

`pull_request` (PyTorch's relay dispatches upstream's pull-request and push events to it, PR results) and `nightly`
(scheduled self-reports). An entry without `events` takes part in both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import yaml

from crcr.config.errors import ConfigError, shown
from crcr.config.fields import GITHUB_REPOSITORY
from crcr.config.paths import display_path
from crcr.config.readfiles import YAML_LIMIT, read_text
from crcr.config.yamlfiles import compose_yaml

LEVELS = ("L1", "L2", "L3", "L4")
EVENTS = ("pull_request", "nightly")
# PyTorch's relay (pytorch/test-infra, aws/lambda/cross_repo_ci_relay) gives an L3 repository a check run on the PRs
# that carry ciflow/crcr/<LABEL_NAME>; the allowlist's own comment still says ciflow/oot/, the prefix it replaced.
L3_LABEL_PREFIX = "ciflow/crcr/"

REPOSITORY_FORM = "<owner>/<name>, e.g. torch-spyre/torch-spyre"
_NULL_TAG = "tag:yaml.org,2002:null"
# The older syntax, and the file's own example, write oncalls as `org/repo: @oncall1,oncall2` or `[@oncall1,@oncall2]`,
# which YAML refuses (no plain value starts with '@'). Such values are quoted before parsing, within their line, so
# that messages keep the file's line numbers.
_KEY = r"(?P<head>^[ \t]*(?:-[ \t]+)?[^\s#'\"][^#\n]*?:[ \t]+)"
_TAIL = r"(?P<tail>[ \t\r]*(?:#[^\n]*)?$)"
_AT_TEXT = re.compile(_KEY + r"(?P<value>@[^#\n\r'\"\[\]{}]*?)" + _TAIL, re.MULTILINE)
_AT_LIST = re.compile(_KEY + r"\[(?P<items>[^#\n\r'\"\[\]{}]*@[^#\n\r'\"\[\]{}]*)\]" + _TAIL, re.MULTILINE)


@dataclass(frozen=True)
class Grant:
    repo: str  # as the allowlist writes it
    level: str
    label: str | None  # the PR label of an L3 repository listed under a label name (the current syntax)
    line: int
    events: tuple[str, ...] = EVENTS  # what the repository takes part in (`events:`; both when not said)

    @property
    def pull_requests(self) -> bool:
        return "pull_request" in self.events


@dataclass(frozen=True)
class Allowlist:
    path: Path
    grants: dict[str, Grant]  # by repository in lower case: GitHub's names ignore case

    def grant_for(self, repo: str) -> Grant | None:
        return self.grants.get(repo.lower())


def read_allowlist(path: Path) -> Allowlist:
    """The allowlist at `path`; an unreadable or malformed file raises ConfigError naming the file and line."""
    where = display_path(path)
    root = compose_yaml(_quote_at_oncalls(read_text(path, YAML_LIMIT)), where)
    return Allowlist(path, _Reader(where).grants(root))


def _quote_at_oncalls(text: str) -> str:
    text = _AT_TEXT.sub(lambda m: f"{m['head']}'{m['value']}'{m['tail']}", text)
    return _AT_LIST.sub(_quoted_list, text)


def _quoted_list(m: re.Match) -> str:
    items = [item.strip() for item in m["items"].split(",")]
    return m["head"] + "[" + ", ".join(f"'{i}'" if i.startswith("@") else i for i in items) + "]" + m["tail"]


class _Reader:
    def __init__(self, where: str):
        self.where = where
        self.found: dict[str, Grant] = {}

    def grants(self, root: yaml.Node | None) -> dict[str, Grant]:
        if root is None:
            return {}
        if not isinstance(root, yaml.MappingNode):
            self.fail(root, f"expected a mapping of levels (L1: ..., L2: ...), found {_kind(root)}")
        levels_seen = set()
        for key, value in root.value:
            level = key.value if isinstance(key, yaml.ScalarNode) else None
            if level not in LEVELS:
                continue  # as upstream's own reader: other keys are not levels
            if level in levels_seen:
                self.fail(key, f"{level} is given twice")
            levels_seen.add(level)
            if level == "L3" and isinstance(value, yaml.MappingNode):
                self.labelled(value)
            elif isinstance(value, yaml.SequenceNode):
                for entry in value.value:
                    self.entry(level, entry)
            elif not (isinstance(value, yaml.ScalarNode) and value.tag == _NULL_TAG):
                self.fail(value, f"{level}: expected a list of repositories, found {_kind(value)}")
        return self.found

    def entry(self, level: str, node: yaml.Node) -> None:
        events = EVENTS
        if isinstance(node, yaml.MappingNode):  # `- org/repo: <oncalls>` or `- org/repo: {events: [...]}`
            if len(node.value) != 1:
                self.fail(node, f"{level}: each entry names one repository (got {len(node.value)})")
            node, value = node.value[0]
            events = self.events(level, value)
        self.add(level, node, label=None, events=events)

    def events(self, level: str, value: yaml.Node) -> tuple[str, ...]:
        """The `events` of an entry's mapping (other keys, such as oncalls, are not used); both without one."""
        if not isinstance(value, yaml.MappingNode):
            return EVENTS  # oncalls
        for key, listed in value.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "events":
                names = [item.value for item in listed.value if isinstance(item, yaml.ScalarNode)] \
                    if isinstance(listed, yaml.SequenceNode) else None
                if not names or len(names) != len(listed.value):
                    self.fail(listed, f"{level}: events: expected a list of {' and '.join(EVENTS)}")
                unknown = [name for name in names if name not in EVENTS]
                if unknown:
                    self.fail(listed, f"{level}: events: {shown(unknown[0])} is not one of {', '.join(EVENTS)}")
                return tuple(name for name in EVENTS if name in names)
        return EVENTS

    def labelled(self, mapping: yaml.MappingNode) -> None:
        """L3 in the current syntax: {LABEL_NAME: {org/repo: [oncalls]}}."""
        for name, repos in mapping.value:
            if not isinstance(name, yaml.ScalarNode):
                self.fail(name, f"L3: expected a label name, found {_kind(name)}")
            if not name.value.strip():
                self.fail(name, "L3: a label name must not be empty")
            if not isinstance(repos, yaml.MappingNode):
                self.fail(repos, f"L3: {name.value}: expected a mapping of repositories to their oncalls, "
                                 f"found {_kind(repos)}")
            for repo, value in repos.value:
                self.add("L3", repo, label=L3_LABEL_PREFIX + name.value, events=self.events("L3", value))

    def add(self, level: str, node: yaml.Node, label: str | None, events: tuple[str, ...] = EVENTS) -> None:
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, f"{level}: expected a repository, found {_kind(node)}")
        repo = node.value
        if re.match(GITHUB_REPOSITORY, repo) is None:
            self.fail(node, f"{level}: {shown(repo)} is not a GitHub repository ({REPOSITORY_FORM})")
        earlier = self.found.get(repo.lower())
        if earlier is not None:
            self.fail(node, f"{level}: {repo} is listed twice (also on line {earlier.line}); "
                            "a repository has one level")
        self.found[repo.lower()] = Grant(repo, level, label, _line(node), events)

    def fail(self, node: yaml.Node, problem: str) -> NoReturn:
        raise ConfigError(f"{self.where}: line {_line(node)}: {problem}")


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return shown(node.value)
