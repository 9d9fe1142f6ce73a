"""The measure step's settings (config section ``measures``).

Every default and bound is the schema's (`contextuality.configuration.schema`), so the
command line, the library and the workflow measure alike; the settings are checked when
made, against the schema's bounds (`schema.check_bounds`) and for what it cannot say.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from contextuality.configuration.schema import check_bounds, default
from contextuality.errors import ConfigError


@dataclass(frozen=True)
class MeasureSettings:
    """Settings of the measure step (config section ``measures``, less the transforms,
    the corrections' fitting and ``top_words``, which choose jobs and tables)."""

    baseline_sample_size: int = default("measures", "baseline_sample_size")
    seed: int = default("measures", "seed")
    bootstrap_resamples: int = default("measures", "bootstrap_resamples")
    sample_replicates: int = default("measures", "sample_replicates")
    confidence: float = default("measures", "confidence")
    isoscore_shrinkage: float = default("measures", "isoscore_shrinkage")
    isotropy_samples: int = default("measures", "isotropy_samples")
    alpha_req_ranks: tuple[int, int] = tuple(default("measures", "alpha_req_ranks"))
    curvature_zero_steps: str = default("measures", "curvature_zero_steps")
    # Optional measures not computed (`registry.OPTIONAL`): their rows and figures are absent.
    leave_out: tuple[str, ...] = tuple(default("measures", "leave_out"))

    def __post_init__(self) -> None:
        # Its names are checked against the registry (`registry.check_left_out`), above;
        # "optional" is every optional measure (`registry.left_out` reads it).
        object.__setattr__(self, "leave_out", tuple(self.leave_out))
        object.__setattr__(self, "alpha_req_ranks", tuple(self.alpha_req_ranks))
        check_bounds(("measures",), {item.name: getattr(self, item.name) for item in fields(self)})
        first, last = self.alpha_req_ranks
        if first >= last:
            raise ConfigError(
                f"measures.alpha_req_ranks must be two ranks, the first below the last, got "
                f"{list(self.alpha_req_ranks)}"
            )
