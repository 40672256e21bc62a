"""Reading the relay's YAML files strictly, with messages that name the file as the user wrote it."""

from __future__ import annotations

from pathlib import Path

import yaml

from crcr.config.errors import ConfigError
from crcr.config.settings import REPO_ROOT


def display_path(path: Path) -> str:
    """Paths inside the repository are shown relative to it, as users wrote them."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


class _StrictKeysLoader(yaml.SafeLoader):
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


def _yaml_problem(error: yaml.YAMLError) -> str:
    """'line 3, column 5: <problem>' rather than PyYAML's multi-line text about a '<unicode string>'."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if mark is None or not problem:
        return " ".join(str(error).split())
    context = getattr(error, "context", None)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" + (f" ({context})" if context else "")


def read_yaml_mapping(path: Path) -> dict:
    """One YAML file's mapping (an empty file is {}); unreadable text, bad YAML, a duplicate key or a
    top level that is not a mapping raise ConfigError naming the file."""
    where = display_path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_StrictKeysLoader)
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML: {_yaml_problem(e)}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not valid YAML: the file is not UTF-8 text") from None
    except OSError as e:
        raise ConfigError(f"{where}: cannot be read: {e.strerror}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of fields (key: value lines), found a {type(data).__name__}")
    return data
