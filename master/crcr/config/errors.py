"""One error type for bad configuration, and readable messages out of pydantic's errors."""

from __future__ import annotations

import difflib
import reprlib
import typing
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ValidationError


class ConfigError(Exception):
    """Invalid relay configuration; the message names the file (or variable), the field and the problem."""


# What a regular expression of a field means, in words, for messages; filled by described_pattern.
PATTERN_HELP: dict[str, str] = {}
# Upper bounds of numbers said with their unit ('604800 seconds (7 days)'); filled by described_limit.
LIMIT_HELP: dict[int, str] = {}
# How much of a value a message shows: a 50 MB description is not echoed back whole.
SHOWN_CHARACTERS = 60
SHOWN_VALUES = 5
# Lists and mappings are shown only in part: repr() of a YAML alias bomb (a list of ten aliases of a
# list of ten aliases of ...) would take for ever, though the file is a few hundred bytes.
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel, _SHORT_REPR.maxstring, _SHORT_REPR.maxother = 2, SHOWN_CHARACTERS, SHOWN_CHARACTERS
_SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = _SHORT_REPR.maxdict = _SHORT_REPR.maxset = SHOWN_VALUES


def described_pattern(pattern: str, meaning: str) -> str:
    """Register how to explain `pattern` to a user ('must be ...') and return the pattern unchanged."""
    PATTERN_HELP[pattern] = meaning
    return pattern


def described_limit(limit: int, meaning: str) -> int:
    """Register how to say the upper bound `limit` ('604800 seconds (7 days)') and return it unchanged.
    Messages find the meaning by the number alone, so two bounds with one number need one meaning."""
    if LIMIT_HELP.setdefault(limit, meaning) != meaning:
        raise ValueError(f"the limit {limit} already means {LIMIT_HELP[limit]!r}")
    return limit


def shown(value) -> str:
    """A value as a message quotes it: its repr, cut short when long."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**SHOWN_CHARACTERS:
        return f"a number of {len(str(abs(value)))} digits"
    if isinstance(value, str) and len(value) > SHOWN_CHARACTERS:
        return f"{value[:SHOWN_CHARACTERS]!r}... ({len(value)} characters)"
    text = repr(value) if isinstance(value, (str, int, float)) else _SHORT_REPR.repr(value)
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "..."


def listed(items: list[str], shown: int) -> str:
    """The first `shown` of `items`, and how many more: 'a.py, b.py and 3 more'."""
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def shown_all(values: Iterable) -> str:
    """'a', 'b', 'c': the first few values shown, then how many more."""
    values = list(values)
    listed = ", ".join(shown(v) for v in values[:SHOWN_VALUES])
    more = len(values) - SHOWN_VALUES
    return listed + (f" and {more} more" if more > 0 else "")


def _submodel(annotation) -> type[BaseModel] | None:
    """The model class inside an annotation such as Suite, list[Suite] or Suite | None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def _model_at(model: type[BaseModel] | None, path: Iterable) -> type[BaseModel] | None:
    for part in path:
        if model is None:
            return None
        if isinstance(part, int):  # an index into a list of models
            continue
        field = model.model_fields.get(part)
        model = _submodel(field.annotation) if field is not None else None
    return model


def _unknown_key(error, model: type[BaseModel] | None, derived: Iterable[str]) -> str:
    loc = error["loc"]
    owner = _model_at(model, loc[:-1])
    if owner is None:
        return "unknown key"
    # A field's alias is its key in the file (`global`, which Python cannot name a field).
    known = [
        field.alias or name for name, field in owner.model_fields.items() if not (owner is model and name in derived)
    ]
    return f"unknown key{did_you_mean(str(loc[-1]), known)}; the known keys are {', '.join(known)}"


def did_you_mean(written: str, known: Iterable[str]) -> str:
    """" (did you mean 'x'?)" naming the known word closest to a misspelt one; '' when none is close."""
    close = difflib.get_close_matches(written, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _explain(error, model: type[BaseModel] | None = None, derived: Iterable[str] = ()) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "extra_forbidden":
        return _unknown_key(error, model, derived)
    if kind == "missing":
        return "required field is missing"
    if kind == "value_error" and "error" in ctx:
        return str(ctx["error"])
    if kind == "string_pattern_mismatch" and ctx.get("pattern") in PATTERN_HELP:
        return f"{PATTERN_HELP[ctx['pattern']]} (got {shown(value)})"
    if kind in ("too_short", "string_too_short") and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters (got {len(value)} characters)"
    if kind == "too_long":
        return f"must have at most {ctx['max_length']} entries (got {ctx['actual_length']})"
    if kind == "less_than_equal":
        return f"must be at most {LIMIT_HELP.get(ctx['le'], ctx['le'])} (got {shown(value)})"
    if kind == "model_type":  # pydantic would name the model class, which the user never sees
        return f"should be a mapping of fields (got {shown(value)})"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"should be a whole number (got {shown(value)})"
    if kind in ("bool_type", "bool_parsing"):
        return f"should be true or false (got {shown(value)})"
    msg = error["msg"]
    if msg.startswith("Input should"):
        msg = "should" + msg[len("Input should") :]
    msg = msg[0].lower() + msg[1:]
    if isinstance(value, (str, int, float)):
        msg += f" (got {shown(value)})"
    return msg


def describe_validation_error(
    error: ValidationError,
    where: Callable[[str], str],
    model: type[BaseModel] | None = None,
    derived: Iterable[str] = (),
    *,
    bracket_indices: bool = False,
) -> str:
    """One line per problem: '<where(top-level field)>[.rest of path]: <what is wrong>'.

    `model` lets an unknown key be answered with the known ones; `derived` are its top-level
    fields that do not come from the user's text (such as a name taken from the file name).
    `bracket_indices` writes list positions as 'files[0].tests[3]' rather than 'files.0.tests.3'.
    """
    lines = []
    for item in error.errors():
        loc = item["loc"]
        path = where(_short(loc[0])) if loc else where("")
        for part in loc[1:]:
            path += f"[{part}]" if bracket_indices and isinstance(part, int) else f".{_short(part)}"
        lines.append(f"{path}: {_explain(item, model, derived)}")
    return "\n".join(lines)


def _short(part) -> str:
    """One step of a field path; a key of the user's (such as a device name) may be any length."""
    part = str(part)
    return part if len(part) <= SHOWN_CHARACTERS else f"{part[:SHOWN_CHARACTERS]}..."
