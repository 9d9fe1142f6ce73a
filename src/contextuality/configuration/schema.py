"""The config schema (package data, ``data/config.schema.yaml``): the one place a setting's
default is written. The settings classes, the command line and the workflow read their
defaults here (`default`), and the workflow fills a config's defaults in (`with_defaults`)
before it checks it, as Snakemake's ``validate(..., set_default=True)`` would after."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from contextuality.errors import check_integer, check_number

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "config.schema.yaml"
# The part of a path that stands for any model's name (``models.<model>.layers``).
ANY_MODEL = "<model>"


@functools.cache
def _schema() -> dict[str, Any]:
    import yaml

    return yaml.safe_load(SCHEMA_PATH.read_text())


def schema() -> dict[str, Any]:
    """The schema, a copy (its defaults are not to be edited in place)."""
    return copy.deepcopy(_schema())


def _node(path: tuple[str | int, ...]) -> dict[str, Any]:
    node = _schema()
    for key in path:
        if isinstance(key, int):
            node = node["oneOf"][key]
        else:
            node = node["additionalProperties"] if key == ANY_MODEL else node["properties"][key]
    return node


def default(*path: str | int) -> Any:
    """The default of the setting at `path` (``default("measures", "seed")``; a model's
    setting under `ANY_MODEL`; an integer picks a form of a setting that takes several, its
    ``oneOf``), a copy; KeyError where the schema gives it none."""
    return copy.deepcopy(_node(path)["default"])


def setting(config: dict[str, Any], *path: str) -> Any:
    """The value of the setting at `path` (section names, then the key) in `config`, the
    schema's default where the config leaves it out (a config not yet filled in)."""
    node: Any = config
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return default(*path)
    return node


def properties(*path: str | int) -> dict[str, Any]:
    """The settings of the section at `path`, by name (each its schema)."""
    return _node(path)["properties"]


def check_bounds(path: tuple[str, ...], values: dict[str, Any]) -> None:
    """Refuse (ConfigError naming ``<section>.<key>``, one line) a value of `values` (settings
    of the section at `path`, by key) that is not of the type or within the bounds the
    schema gives that key: its ``minimum``, ``maximum`` and their exclusive forms, for an
    integer or a number (None where the schema allows null). Settings made without a
    config (the command line, the library) are so refused as a dry run refuses the config,
    by the bounds written once, in the schema."""
    section = ".".join(str(key) for key in path)
    for name, value in values.items():
        node = properties(*path)[name]
        types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        if value is None and "null" in types:
            continue
        if "integer" in types:
            check_integer(section, name, value, node.get("minimum"))
        beyond_a_minimum = {"maximum", "exclusiveMinimum", "exclusiveMaximum"} & set(node)
        if "number" in types or ("integer" in types and beyond_a_minimum):
            check_number(
                section,
                name,
                value,
                node.get("minimum", node.get("exclusiveMinimum", -float("inf"))),
                node.get("maximum", node.get("exclusiveMaximum", float("inf"))),
                open_low="exclusiveMinimum" in node,
                open_high="exclusiveMaximum" in node,
            )


def with_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with every default of the schema filled in, in place (and returned): a
    section's defaults where the section is given or has a default of its own, as
    Snakemake's ``validate(..., set_default=True)`` fills them."""
    import jsonschema

    def filled(validator, properties, instance, subschema):
        for name, setting in properties.items():
            if isinstance(instance, dict) and "default" in setting:
                instance.setdefault(name, copy.deepcopy(setting["default"]))
        yield from jsonschema.Draft202012Validator.VALIDATORS["properties"](
            validator, properties, instance, subschema
        )

    filler = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"properties": filled})
    for _ in filler(_schema()).iter_errors(config):
        pass  # the errors are check_config's to report, one line each
    return config
