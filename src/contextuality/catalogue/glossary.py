"""The glossary: one name per concept, and where the code spells it (``data/names.yaml``).

Each name is kept with its config keys, its workflow rules, the library objects that
implement it and the output paths it is written to; docs/architecture.md draws its table
of names from here, and tests/test_architecture.py checks the code against it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

NAMES_PATH = Path(__file__).resolve().parents[1] / "data" / "names.yaml"


@dataclass(frozen=True)
class Name:
    """A concept's one name, what it is, and where it is spelt: config keys (``<m>`` for
    any model), rules (``extract_<m>``: one per model), library objects (dotted, under
    ``contextuality``) and output paths (``<x>`` for any value; a trailing ``/`` a
    directory)."""

    name: str
    meaning: str
    config: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    library: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@functools.cache
def names() -> tuple[Name, ...]:
    """Every name of the glossary, in its order."""
    import yaml

    entries = yaml.safe_load(NAMES_PATH.read_text())
    return tuple(
        Name(
            **{
                key: tuple(value) if isinstance(value, list) else value
                for key, value in entry.items()
            }
        )
        for entry in entries
    )


def _codes(values: tuple[str, ...]) -> str:
    return ", ".join(f"`{value}`" for value in values)


def docs_table() -> str:
    """The glossary as a markdown table (docs/architecture.md, through docs/macros.py)."""
    lines = [
        "| name | what it is | config | rule and step | library | output |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| *{name.name}* | {name.meaning} | {_codes(name.config)} | {_codes(name.rules)} "
        f"| {_codes(name.library)} | {_codes(name.outputs)} |"
        for name in names()
    ]
    return "\n".join(lines)
