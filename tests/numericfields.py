"""Where the numbers of a file are: found from its model's fields, so that a test over every number of the backend,
host and settings files also covers a number added later."""

from __future__ import annotations

import copy
from types import NoneType, UnionType
from typing import Annotated, Union, get_args, get_origin

from pydantic import BaseModel

NUMBERS = (int, float)


def number_paths(model: type[BaseModel], document: dict) -> list[tuple]:
    """The path (keys and list indexes) of every number `model` reads in `document`, a valid file's data. A number
    the document leaves out is listed too; a sub-model (a suite, a schedule) is reached through the document, which
    must hold one of each."""
    return list(_in_model(model, document, ()))


def with_value(document: dict, path: tuple, value) -> dict:
    """A copy of `document` whose field at `path` is `value`."""
    changed = copy.deepcopy(document)
    *parents, last = path
    node = changed
    for part in parents:
        node = node[part]
    node[last] = value
    return changed


def _in_model(model: type[BaseModel], data: dict, path: tuple):
    for name, field in model.model_fields.items():
        key = field.alias or name
        yield from _in_value(field.annotation, data.get(key), path + (key,))


def _in_value(annotation, value, path: tuple):
    if annotation in NUMBERS:
        yield path
        return
    if not _mentions_numbers(annotation):
        return
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Annotated, Union, UnionType):
        for arg in args:
            if arg is not NoneType:
                yield from _in_value(arg, value, path)
        return
    if not value:
        raise AssertionError(f"{'.'.join(map(str, path))}: the test's document has none: give it one, so that the "
                             "numbers in it are tested")
    if origin is list:
        yield from _in_value(args[0], value[0], path + (0,))
    elif origin is dict:
        key = next(iter(value))
        yield from _in_value(args[1], value[key], path + (key,))
    else:
        yield from _in_model(annotation, value, path)


def _mentions_numbers(annotation) -> bool:
    if annotation in NUMBERS:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return any(_mentions_numbers(field.annotation) for field in annotation.model_fields.values())
    return any(_mentions_numbers(arg) for arg in get_args(annotation))
