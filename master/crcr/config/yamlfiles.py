"""Reading the relay's YAML files strictly, with messages that name the file as the user wrote it; each document's
node tree is measured for alias bombs (yamlaliases.py) before anything is built of it."""

from __future__ import annotations

from pathlib import Path

import yaml

from crcr.config.errors import ConfigError
from crcr.config.paths import display_path
from crcr.config.readfiles import YAML_LIMIT, read_text
from crcr.config.yamlaliases import AliasesRefused, refuse_alias_bombs


class _StrictKeys:
    """PyYAML keeps the last of two equal keys silently; a duplicated `level:` must be an error instead."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key; SafeLoader reports it
                    continue
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key '{key}'", key_node.start_mark
                    )
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        # Python refuses to read whole numbers of over 4300 digits with a ValueError, not a YAML error.
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            digits = sum(c.isdigit() for c in node.value)
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {digits} digits is too long to read", node.start_mark
            ) from None


class _StrictKeysLoader(_StrictKeys, yaml.SafeLoader):
    """PyYAML's own parser: its messages are the ones users get."""


class _FastStrictKeysLoader(_StrictKeys, yaml.CSafeLoader):
    """libyaml's parser, six times faster (a relay has hundreds of files, read at each reconfig); its messages
    say less, so a file it refuses is read again with _StrictKeysLoader for the message."""


for _loader in (_StrictKeysLoader, _FastStrictKeysLoader):
    _loader.add_constructor("tag:yaml.org,2002:int", _loader.construct_yaml_int)


def _measured(root: yaml.Node | None, text: str) -> yaml.Node | None:
    """`root` once refuse_alias_bombs let it pass; at once when its text has no '*', so no alias."""
    if root is not None and "*" in text:
        refuse_alias_bombs(root)
    return root


def _load(text: str, loader_class) -> object:
    """yaml.load, the node tree measured before anything is built of it."""
    loader = loader_class(text)
    try:
        root = _measured(loader.get_single_node(), text)
        return None if root is None else loader.construct_document(root)
    finally:
        loader.dispose()


def _refused(where: str, error: yaml.YAMLError) -> ConfigError:
    said = "" if isinstance(error, AliasesRefused) else "not valid YAML: "
    return ConfigError(f"{where}: {said}{_yaml_problem(error)}")


def _yaml_problem(error: yaml.YAMLError) -> str:
    """'line 3, column 5: <problem>' rather than PyYAML's multi-line text about a '<unicode string>'."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if mark is None or not problem:
        return " ".join(str(error).split())
    context = getattr(error, "context", None)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" + (f" ({context})" if context else "")


def compose_yaml(text: str, where: str) -> yaml.Node | None:
    """The node tree of a YAML text (None when empty), for readers whose messages name the line of a value
    (node.start_mark.line + 1); bad YAML raises ConfigError naming `where`."""
    try:
        return _measured(yaml.compose(text, Loader=yaml.SafeLoader), text)
    except yaml.YAMLError as e:
        raise _refused(where, e) from None


def read_yaml_mapping(path: Path) -> dict:
    """One YAML file's mapping (an empty file is {}); an unreadable or too large file, bad YAML, a
    duplicate key or a top level that is not a mapping raise ConfigError naming the file."""
    return yaml_mapping(read_text(path, YAML_LIMIT), path)


def yaml_mapping(text: str, path: Path) -> dict:
    """The mapping of `text`, read from `path` (read_yaml_mapping)."""
    try:
        data = _load(text, _FastStrictKeysLoader)
    except AliasesRefused as e:
        raise _refused(display_path(path), e) from None
    except yaml.YAMLError:
        try:
            data = _load(text, _StrictKeysLoader)
        except yaml.YAMLError as e:
            raise _refused(display_path(path), e) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{display_path(path)}: expected a mapping of fields (key: value lines), "
                          f"found a {type(data).__name__}")
    return data
