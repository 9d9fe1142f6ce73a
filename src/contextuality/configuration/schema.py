"""The config schema (package data, ``data/config.schema.yaml``): the one place a setting's
default is written. The settings classes, the command line and the workflow read their
defaults here (`default`), and the workflow fills a config's defaults in (`with_defaults`)
before it checks it, as Snakemake's ``validate(..., set_default=True)`` would after."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from contextuality.errors import ConfigError, check_integer, check_number

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "config.schema.yaml"
# The part of a path that stands for any model's name (``models.<model>.layers``).
ANY_MODEL = "<model>"


def read_yaml(path: str | Path) -> Any:
    """The YAML file at `path`, read safely by libyaml where PyYAML has it (the schema,
    46 kB, in 15 ms rather than 190 ms: every job and command reads it)."""
    import yaml

    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def _schema() -> dict[str, Any]:
    return read_yaml(SCHEMA_PATH)


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


def choices(*path: str | int) -> tuple[Any, ...]:
    """The values the schema allows the setting at `path` (its ``enum``, or its items'
    for a list), in the schema's order."""
    node = _node(path)
    return tuple(node.get("items", node)["enum"])


def check_bounds(path: tuple[str | int, ...], values: dict[str, Any]) -> None:
    """Refuse (ConfigError naming ``<section>.<key>``, one line) a value of `values` (settings
    of the section at `path`, by key) that is not of the type or within the bounds the
    schema gives that key: its ``enum``, ``minimum``, ``maximum`` and their exclusive forms
    for an integer or a number (None where the schema allows null), and a list's length,
    distinct items and each item's bounds. Settings made without a config (the command
    line, the library) are so refused as a dry run refuses the config, by the bounds
    written once, in the schema."""
    section = ".".join(key for key in path if isinstance(key, str))
    for name, value in values.items():
        _check_value(section, name, value, properties(*path)[name])


def _check_value(section: str, name: str, value: Any, node: dict[str, Any]) -> None:
    """Refuse (ConfigError) `value` of setting ``section.name`` outside schema `node`'s bounds."""
    types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    if value is None and "null" in types:
        return
    if "enum" in node and value not in node["enum"]:
        raise ConfigError(f"{section}.{name} must be one of {node['enum']}, got {value!r}")
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
    if "array" in types and isinstance(value, list | tuple):
        _check_list(section, name, value, node)


def _check_list(section: str, name: str, value: list | tuple, node: dict[str, Any]) -> None:
    """Refuse (ConfigError) list `value` of setting ``section.name`` of another length than
    schema `node` allows, with an item repeated where it wants them distinct, or with an
    item outside its items' bounds."""
    low, high = node.get("minItems", 0), node.get("maxItems")
    if len(value) < low or (high is not None and len(value) > high):
        count = f"at least {low}" if high is None else low if low == high else f"{low} to {high}"
        noun = "item" if (high or low) == 1 else "items"
        raise ConfigError(f"{section}.{name} must have {count} {noun}, got {list(value)}")
    if node.get("uniqueItems") and len(set(value)) < len(value):
        raise ConfigError(f"{section}.{name} must not repeat an item, got {list(value)}")
    for item in value:
        _check_value(section, name, item, node.get("items", {}))


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
