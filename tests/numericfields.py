"""Where the numbers and booleans of a file are: found from its model's fields, so that a test over every number (or
boolean) of the backend, host and settings files also covers one added later."""

from __future__ import annotations

import copy
from types import NoneType, UnionType
from typing import Annotated, Union, get_args, get_origin

from pydantic import BaseModel

NUMBERS = (int, float)
BOOLEANS = (bool,)


def number_paths(model: type[BaseModel], document: dict) -> list[tuple]:
    """The path (keys and list indexes) of every number `model` reads in `document`, a valid file's data. A number
    the document leaves out is listed too; a sub-model (a suite, a schedule) is reached through the document, which
    must hold one of each."""
    return list(_in_model(NUMBERS, model, document, ()))


def boolean_paths(model: type[BaseModel], document: dict) -> list[tuple]:
    """As number_paths, of every boolean."""
    return list(_in_model(BOOLEANS, model, document, ()))


def with_value(document: dict, path: tuple, value) -> dict:
    """A copy of `document` whose field at `path` is `value`."""
    changed = copy.deepcopy(document)
    *parents, last = path
    node = changed
    for part in parents:
        node = node[part]
    node[last] = value
    return changed


def _in_model(kinds: tuple, model: type[BaseModel], data: dict, path: tuple):
    for name, field in model.model_fields.items():
        key = field.alias or name
        yield from _in_value(kinds, field.annotation, data.get(key), path + (key,))


def _in_value(kinds: tuple, annotation, value, path: tuple):
    if annotation in kinds:
        yield path
        return
    if not _mentions(kinds, annotation):
        return
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Annotated, Union, UnionType):
        for arg in args:
            if arg is not NoneType:
                yield from _in_value(kinds, arg, value, path)
        return
    if not value:
        raise AssertionError(f"{'.'.join(map(str, path))}: the test's document has none: give it one, so that the "
                             "values in it are tested")
    if origin is list:
        yield from _in_value(kinds, args[0], value[0], path + (0,))
    elif origin is dict:
        key = next(iter(value))
        yield from _in_value(kinds, args[1], value[key], path + (key,))
    else:
        yield from _in_model(kinds, annotation, value, path)


def _mentions(kinds: tuple, annotation) -> bool:
    if annotation in kinds:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return any(_mentions(kinds, field.annotation) for field in annotation.model_fields.values())
    return any(_mentions(kinds, arg) for arg in get_args(annotation))
