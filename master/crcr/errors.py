"""One error type for bad configuration, and readable messages out of pydantic's errors."""

from __future__ import annotations

from typing import Callable

from pydantic import ValidationError


class ConfigError(Exception):
    """Invalid relay configuration; the message names the file (or variable), the field and the problem."""


def _explain(error) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key (check the spelling against the README)"
    if error["type"] == "missing":
        return "required field is missing"
    return error["msg"][0].lower() + error["msg"][1:]


def describe_validation_error(error: ValidationError, where: Callable[[str], str]) -> str:
    """One line per problem: '<where(top-level field)>[.rest of path]: <what is wrong>'."""
    lines = []
    for item in error.errors():
        loc = [str(part) for part in item["loc"]]
        head = where(loc[0]) if loc else where("")
        path = ".".join([head, *loc[1:]]) if loc else head
        lines.append(f"{path}: {_explain(item)}")
    return "\n".join(lines)
