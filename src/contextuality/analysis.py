"""All measures of one (model, layer) shard: per-word, per-sentence and summary values.

Which occurrences count: rows with a vector (finite, not all zero). SelfSim and MEV are
computed for indexed words (≥ min_contexts distinct sentences in the corpus) that still
have occurrences in at least two sentences; IntraSim for sentences with at least two words.
Adjusted value = raw − baseline: the cosine baseline for SelfSim and IntraSim, the MEV
baseline for MEV (paper §4.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality import measures

MEASURES = ("selfsim", "intrasim", "mev")


@dataclass(frozen=True)
class MeasureSettings:
    """Settings of the measure step (config section ``measures``)."""

    baseline_sample_size: int = 1000
    seed: int = 0
    mev_centered: bool = False


@dataclass
class LayerMeasures:
    """Per-word table, per-sentence table and the layer's summary values."""

    words: pd.DataFrame
    sentences: pd.DataFrame
    summary: dict[str, Any]


def _run_starts(*keys: np.ndarray) -> np.ndarray:
    """Start positions of runs over which every key array stays constant."""
    if len(keys[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    changes = np.zeros(len(keys[0]), dtype=bool)
    changes[0] = True
    for key in keys:
        changes[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(changes)


def measure_layer(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: MeasureSettings,
) -> LayerMeasures:
    """Compute SelfSim, IntraSim, MEV and their baselines for one layer.

    vectors: (n_occurrences, d) rows aligned with ``occurrences``; NaN rows are missing.
    """
    valid = np.isfinite(vectors).all(axis=1)
    valid &= np.any(vectors != 0, axis=1)
    rows = np.flatnonzero(valid)
    sentence_id = occurrences["sentence_id"].to_numpy()[rows]
    word_id = occurrences["word_id"].to_numpy()[rows]
    kept = vectors if len(rows) == len(vectors) else vectors[rows]
    unit = measures.unit_rows(kept)

    sentence_starts = _run_starts(sentence_id)
    sentence_sizes = measures.group_sizes(sentence_starts, len(rows))
    baseline_cosine = measures.anisotropy_baseline(unit, sentence_starts)
    rng = np.random.default_rng(settings.seed)
    baseline_mev = measures.explained_variance_baseline(
        kept, settings.baseline_sample_size, rng, centered=settings.mev_centered
    )

    multi_word = sentence_sizes >= 2
    sentence_rows = np.flatnonzero(np.repeat(multi_word, sentence_sizes))
    intrasim = measures.intra_similarity(
        kept[sentence_rows], _run_starts(sentence_id[sentence_rows])
    )
    sentences = pd.DataFrame(
        {
            "sentence_id": sentence_id[sentence_starts[multi_word]],
            "n_words": sentence_sizes[multi_word],
            "intrasim": intrasim,
            "intrasim_adjusted": intrasim - baseline_cosine,
        }
    )

    indexed = vocab["indexed"].to_numpy()[word_id]
    order = np.flatnonzero(indexed)[np.lexsort((sentence_id[indexed], word_id[indexed]))]
    word_starts = _run_starts(word_id[order])
    context_starts = _run_starts(word_id[order], sentence_id[order])
    words = vocab.set_index("word_id").loc[
        word_id[order][word_starts], ["word", "count", "n_contexts", "frequency_rank"]
    ]
    words = words.reset_index()
    words["n"] = measures.group_sizes(word_starts, len(order))
    words["selfsim"] = measures.self_similarity(unit[order], word_starts, context_starts)
    words["mev"] = measures.explained_variance_per_group(
        kept[order], word_starts, settings.mev_centered
    )
    words = words[np.isfinite(words["selfsim"])].reset_index(drop=True)
    words["selfsim_adjusted"] = words["selfsim"] - baseline_cosine
    words["mev_adjusted"] = words["mev"] - baseline_mev

    summary: dict[str, Any] = {
        "n_occurrences": int(len(vectors)),
        "n_missing": int(len(vectors) - len(rows)),
        "mev_centered": settings.mev_centered,
        "baseline_sample_size": settings.baseline_sample_size,
        "seed": settings.seed,
    }
    for name, values, baseline in (
        ("selfsim", words["selfsim"], baseline_cosine),
        ("intrasim", sentences["intrasim"], baseline_cosine),
        ("mev", words["mev"], baseline_mev),
    ):
        raw = float(values.mean())
        summary[name] = {
            "raw": raw,
            "baseline": baseline,
            "adjusted": raw - baseline,
            "n": int(len(values)),
        }
    return LayerMeasures(words=words, sentences=sentences, summary=summary)
