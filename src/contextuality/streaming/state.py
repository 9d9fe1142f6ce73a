"""A streamed layer's state: what is summed, how it was sampled, and its file.

Per layer, in float64 (u = f/‖f‖; a context is a sentence), a state holds:

- per indexed word w: Σ_j u_j, Σ_j f_j, Σ_s ‖Σ_{j∈s} u_j‖², n_w and Σ_s n_{w,s}², whence
  SelfSim(w) = (‖Σ_j u_j‖² − Σ_s ‖Σ_{j∈s} u_j‖²) / (n_w² − Σ_s n_{w,s}²) exactly;
- for the layer: Σ_i u_i, per dimension Σ_s (Σ_{i∈s} u_i)², N and Σ_s n_s², whence the
  exact anisotropy baseline (‖Σu‖² − Σ_s‖Σ_{i∈s}u_i‖²)/(N² − Σ_s n_s²) and each
  dimension's share of it (``rogue_share[k]``);
- per sentence: IntraSim(s) = (Σ_i u_i)·s̄ / (n ‖s̄‖), s̄ = Σ_i f_i, from the sentence's two
  sums (a sentence never spans two segments);
- the rows of its seeded samples (see `accumulate`), as the vectors were stored (float16
  unless they overflowed it), read as float32.

One HDF5 state file per layer (``layer_<L>.state.h5``), written like a shard (temporary
name, then renamed) with the same provenance attributes. What a streamed layer cannot give
is what the measure registry marks not streamed (`registry.not_streamed`), and every
summary measured from one lists it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.configuration.schema import ANY_MODEL, check_bounds, default
from contextuality.errors import ShardMismatchError
from contextuality.measures.settings import MeasureSettings
from contextuality.storage.hdf5 import (
    check_attributes,
    read_attributes,
    read_checked,
    reading,
)

FORMAT = "contextuality-streaming-state/1"


@dataclass(frozen=True)
class StreamingSettings:
    """What a streaming run samples (config ``streaming`` with ``measures``' settings).

    word_sample_size: at most this many occurrences per indexed word for MEV and the static
    vectors (all of a word's when it has no more). seed, baseline_sample_size,
    sample_replicates: the measures' (`settings.MeasureSettings`), which fix the MEV
    baseline's samples; the words' sample is drawn from the word-sample stream
    (`random_streams`).
    """

    word_sample_size: int = default("models", ANY_MODEL, "streaming", 1, "word_sample_size")
    seed: int = default("measures", "seed")
    baseline_sample_size: int = default("measures", "baseline_sample_size")
    sample_replicates: int = default("measures", "sample_replicates")

    def __post_init__(self) -> None:
        check_bounds(
            ("models", ANY_MODEL, "streaming", 1), {"word_sample_size": self.word_sample_size}
        )
        MeasureSettings(
            seed=self.seed,
            baseline_sample_size=self.baseline_sample_size,
            sample_replicates=self.sample_replicates,
        )  # checks the measures' settings as the measure step will

    @classmethod
    def from_measures(
        cls, settings: MeasureSettings, word_sample_size: int | None = None
    ) -> StreamingSettings:
        return cls(
            word_sample_size=cls.word_sample_size if word_sample_size is None else word_sample_size,
            seed=settings.seed,
            baseline_sample_size=settings.baseline_sample_size,
            sample_replicates=settings.sample_replicates,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "word_sample_size": self.word_sample_size,
            "seed": self.seed,
            "baseline_sample_size": self.baseline_sample_size,
            "sample_replicates": self.sample_replicates,
        }


@dataclass
class LayerSums:
    """One layer's running sums (see the module docstring), for `n_words` tracked words and
    `n_sentences` sentences."""

    word_unit_sum: np.ndarray
    word_vector_sum: np.ndarray
    word_context_square: np.ndarray
    word_n: np.ndarray
    word_context_pairs: np.ndarray
    word_n_with_repeats: np.ndarray
    unit_sum: np.ndarray
    sentence_square_by_dimension: np.ndarray
    n: int = 0
    same_sentence_pairs: int = 0
    sentence_n: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sentence_intrasim: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def empty(cls, n_words: int, n_sentences: int, dim: int) -> LayerSums:
        return cls(
            word_unit_sum=np.zeros((n_words, dim)),
            word_vector_sum=np.zeros((n_words, dim)),
            word_context_square=np.zeros(n_words),
            word_n=np.zeros(n_words, np.int64),
            word_context_pairs=np.zeros(n_words, np.int64),
            word_n_with_repeats=np.zeros(n_words, np.int64),
            unit_sum=np.zeros(dim),
            sentence_square_by_dimension=np.zeros(dim),
            sentence_n=np.zeros(n_sentences, np.int64),
            sentence_intrasim=np.full(n_sentences, np.nan),
        )


@dataclass
class StreamingState:
    """One layer's state file: its attributes (provenance, ``layer``, ``streaming``
    settings, ``n_rows``, ``n_valid``, ``same_sentence_pairs``), its sums (see
    `StreamingAccumulator`) and its kept rows (``kept_rows`` sorted occurrence ids,
    ``kept_vectors`` stored as the vectors were (float16 unless they overflowed it) and
    read as float32 at least, NaN where an occurrence had no vector; ``in_word_sample``
    marks the words' sample, the others are the MEV baseline's)."""

    attributes: dict[str, Any]
    word_id: np.ndarray
    sums: LayerSums
    kept_rows: np.ndarray
    kept_vectors: np.ndarray
    in_word_sample: np.ndarray

    @property
    def settings(self) -> StreamingSettings:
        return StreamingSettings(**self.attributes["streaming"])


def load_state(
    path: str | os.PathLike,
    index_checksum: str | None = None,
    n_rows: int | None = None,
    expected: dict[str, Any] | None = None,
) -> StreamingState:
    """Read a state file, refusing (ShardMismatchError) one that is incomplete, was
    accumulated over another occurrence index or number of rows, whose attributes differ
    from `expected`, or whose data fails its checksums, as `storage.shards.load_shard`
    refuses a shard."""
    path = Path(path)
    with reading(path, "state file") as handle:
        attributes = read_attributes(handle)
        if attributes.get("format") != FORMAT:
            raise ShardMismatchError(f"{path}: not a streaming state file ({FORMAT})")
        checks = dict(expected or {})
        if n_rows is not None:
            checks["n_rows"] = n_rows
        check_attributes(path, attributes, index_checksum, checks, what="state file")
        data = {name: read_checked(handle[name]) for name in handle}
        sums = LayerSums(
            **{
                name: data[name]
                for name in LayerSums.__dataclass_fields__
                if name not in ("n", "same_sentence_pairs")
            },
            n=int(attributes["n_valid"]),
            same_sentence_pairs=int(attributes["same_sentence_pairs"]),
        )
        return StreamingState(
            attributes=attributes,
            word_id=data["word_id"],
            sums=sums,
            kept_rows=data["kept_rows"],
            kept_vectors=_at_least_float32(data["kept_vectors"]),
            in_word_sample=data["in_word_sample"],
        )


def _at_least_float32(vectors: np.ndarray) -> np.ndarray:
    """Stored rows as the measures compute on them: float16 widened to float32 (exactly),
    wider ones as they are."""
    return vectors.astype(np.promote_types(vectors.dtype, np.float32), copy=False)
