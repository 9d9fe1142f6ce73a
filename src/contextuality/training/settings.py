"""What a training run is: the architecture shared by every run of a config, and each
run's own architecture kind, seed and warm-up (config ``training``, whose schema holds
every default)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from contextuality.configuration.schema import ANY_MODEL, default

# The two kinds of model trained: a causal LM and a masked LM.
ARCHITECTURES = ("gpt2", "bert")


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """The size and schedule every run shares: `layers` blocks of `hidden_size` dimensions
    (`heads` heads, feed-forward `intermediate_size`), a tokenizer of `vocab_size` entries,
    training blocks of `block` tokens (also the models' positions), `batch_size` blocks a
    step at `learning_rate` (AdamW, constant after its warm-up); the held-out loss on the
    first `held_out_blocks` held-out blocks at each saved step and at `evaluation_steps`."""

    layers: int
    hidden_size: int
    heads: int
    intermediate_size: int
    vocab_size: int
    block: int
    batch_size: int
    learning_rate: float
    held_out_blocks: int
    evaluation_steps: tuple[int, ...]

    def __post_init__(self) -> None:
        # A config gives a list; the settings are hashable, as frozen settings are.
        object.__setattr__(self, "evaluation_steps", tuple(self.evaluation_steps))
        if self.hidden_size % self.heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of heads {self.heads}"
            )

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None = None) -> TrainingSettings:
        """The settings of config ``training`` (`section`; its runs and steps are not
        these), the schema's default for each it leaves out."""
        given = section or {}
        return cls(
            **{
                field.name: given[field.name]
                if field.name in given
                else default("training", field.name)
                for field in dataclasses.fields(cls)
            }
        )


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """One run: its `architecture` (one of `ARCHITECTURES`), the `seed` its initialization,
    data order and masking are drawn from, and the steps over which the learning rate
    rises linearly to its full value (`warmup`)."""

    architecture: str
    seed: int
    warmup: int

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(
                f"architecture {self.architecture!r}: one of {', '.join(ARCHITECTURES)}"
            )

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> RunSettings:
        """The run of a config's ``training.runs.<run>`` (`section`), the schema's default
        for its seed and warm-up where it leaves them out."""
        return cls(
            **{
                field.name: section[field.name]
                if field.name in section
                else default("training", "runs", ANY_MODEL, field.name)
                for field in dataclasses.fields(cls)
            }
        )


@dataclasses.dataclass(frozen=True)
class ProbeSettings:
    """The early steps a run measures in memory as it reaches them (`steps`), on
    `sentences` of the corpus's sentences drawn from `seed`."""

    steps: tuple[int, ...]
    sentences: int
    seed: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(sorted(self.steps)))
