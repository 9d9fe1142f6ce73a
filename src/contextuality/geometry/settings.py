"""The geometry steps' settings as one typed record. Made from config ``geometry`` (the
keys that choose jobs aside) with the measures' seed and confidence
(`workflow.geometry_settings`), and checked as it is made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextuality.errors import ConfigError
from contextuality.geometry.alignment import AlignmentSettings
from contextuality.geometry.dimension import DimensionSettings

_REQUIRED = ("seed", "confidence", "sample_size")
_NESTED = ("intrinsic_dimension", "alignment", "search")


@dataclass(frozen=True)
class GeometrySettings:
    """seed: every sample's (of rows, of scales, of nulls); confidence: the intervals'
    level; sample_size: the rows sampled from the occurrence index (None: every row);
    `config`: the settings as given, which the outputs' ``config_hash`` digests."""

    seed: int
    confidence: float
    sample_size: int | None
    intrinsic_dimension: DimensionSettings = field(default_factory=DimensionSettings)
    alignment: AlignmentSettings = field(default_factory=AlignmentSettings)
    config: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_config(cls, settings: dict[str, Any]) -> GeometrySettings:
        """From the geometry steps' settings dict, refusing a key it does not know and
        naming one it lacks (seed, confidence and sample_size have no default here: the
        schema holds theirs)."""
        unknown = sorted(set(settings) - {*_REQUIRED, *_NESTED})
        missing = [key for key in _REQUIRED if key not in settings]
        problems = [f"unknown {', '.join(unknown)}"] if unknown else []
        problems += [f"missing {', '.join(missing)}"] if missing else []
        if problems:
            raise ConfigError(f"geometry settings: {'; '.join(problems)}")
        return cls(
            seed=settings["seed"],
            confidence=settings["confidence"],
            sample_size=settings["sample_size"],
            intrinsic_dimension=DimensionSettings(
                **settings.get("intrinsic_dimension", {}), search=settings.get("search", {})
            ),
            alignment=AlignmentSettings(
                **settings.get("alignment", {}), search=settings.get("search", {})
            ),
            config=dict(settings),
        )
