"""The settings refuse what the schema's bounds refuse, reading the bounds from the schema
(`configuration.schema.check_bounds`): no bound is written a second time in code."""

from __future__ import annotations

import dataclasses

import pytest

from contextuality.configuration.schema import properties
from contextuality.errors import ConfigError
from contextuality.measures.settings import MeasureSettings
from contextuality.transforms.fitting import TransformSettings

SETTINGS = [(MeasureSettings, ("measures",)), (TransformSettings, ("measures", "transform_fit"))]


def _bounded(settings: type, path: tuple[str, ...]) -> list[tuple[str, dict]]:
    """The settings' fields whose key in the section at `path` has a lower bound."""
    section = properties(*path)
    return [
        (field.name, section[field.name])
        for field in dataclasses.fields(settings)
        if field.name in section and {"minimum", "exclusiveMinimum"} & set(section[field.name])
    ]


@pytest.mark.parametrize(("settings", "path"), SETTINGS, ids=lambda value: str(value))
def test_a_value_at_a_bound_is_taken_and_one_past_it_refused_naming_the_key(settings, path):
    bounded = _bounded(settings, path)
    assert bounded
    for name, node in bounded:
        if "minimum" in node:
            settings(**{name: node["minimum"]})
            below = node["minimum"] - (1 if "integer" in node["type"] else 1e-9)
        else:
            below = node["exclusiveMinimum"]
        with pytest.raises(ConfigError, match=rf"^{'.'.join(path)}\.{name} must be"):
            settings(**{name: below})
        if "exclusiveMaximum" in node or "maximum" in node:
            above = node.get("exclusiveMaximum", node.get("maximum", 0) + 1)
            with pytest.raises(ConfigError, match=rf"^{'.'.join(path)}\.{name} must be in"):
                settings(**{name: above})


def test_null_is_taken_where_the_schema_allows_it_and_a_bool_is_no_integer():
    section = properties("measures", "transform_fit")
    nullable = [name for name, node in section.items() if "null" in node.get("type", [])]
    assert nullable
    for name in nullable:
        assert getattr(TransformSettings(**{name: None}), name) is None
    with pytest.raises(ConfigError, match="measures.seed must be an integer"):
        MeasureSettings(seed=True)
