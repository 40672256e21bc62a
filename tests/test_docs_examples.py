"""The documented backend file (docs/backends.md) says what the code does: every default its comments state is the
model's."""

from __future__ import annotations

import re

import yaml

from crcr.config.backend import Backend
from crcr.config.settings import REPO_ROOT
from crcr.config.suite import Suite

BACKENDS_DOC = REPO_ROOT / "docs" / "backends.md"
EXAMPLE_START = "# backends/spyre.yaml"
TOP_LEVEL, SUITE_FIELD = re.compile(r"^(\w+):(.*)$"), re.compile(r"^    (\w+):(.*)$")


def example_lines() -> list[str]:
    """The lines of the documented backends/spyre.yaml, from its name to the end of its block."""
    text = BACKENDS_DOC.read_text(encoding="utf-8")
    start = text.index(EXAMPLE_START)
    return text[start:text.index("```", start)].splitlines()


def stated_default(value: str, comment: str):
    """The default a line's comment states: 'newest (default)', '(default 3600)', or '(the default)' of the value
    written; None when it states none, or none in words the test can compare (a duration such as '6 h')."""
    if (named := re.search(r"([\w-]+) \(default\)", comment)) is not None:
        return named.group(1)
    if (number := re.search(r"\(default (\d+)\b(?! h)", comment)) is not None:
        return int(number.group(1))
    if "(the default)" in comment:
        return yaml.safe_load(value)
    return None


def test_the_documented_backend_file_states_the_models_defaults():
    stated, actual = [], []
    for line in example_lines():
        for pattern, model in ((TOP_LEVEL, Backend), (SUITE_FIELD, Suite)):
            if (field := pattern.match(line)) is not None and "#" in field.group(2):
                name, (value, comment) = field.group(1), field.group(2).split("#", 1)
                if (default := stated_default(value, comment)) is not None:
                    stated.append((model.__name__, name, default))
                    default = model.model_fields[name].get_default(call_default_factory=True)
                    actual.append((model.__name__, name, default))

    assert len(stated) >= 7, f"the example's stated defaults were not found: {stated}"
    assert stated == actual
