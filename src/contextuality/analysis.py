"""All measures of one (model, layer) shard: per-word, per-sentence and summary values.

Which occurrences count: rows with a vector (finite, not all zero). SelfSim and MEV are
computed for indexed words (≥ min_contexts distinct sentences in the corpus) that still
have occurrences in at least two sentences; IntraSim for sentences with at least two words.

Adjusted value = raw − baseline (paper §4.1): the exact anisotropy baseline (mean cosine
of random occurrences from different sentences) for SelfSim and IntraSim, the MEV of a
random sample of occurrences for MEV. MEV is reported uncentered (the paper) and centered
(PCA). Every summary value carries an interval: a percentile bootstrap over words or
sentences for the raw mean and over the sampled occurrences for the paper's sampled
cosine baseline, and the spread of independent samples for the MEV baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from contextuality import measures

WORD_CLASSES = ("stopword", "content", "other")


@dataclass(frozen=True)
class MeasureSettings:
    """Settings of the measure step (config section ``measures``)."""

    baseline_sample_size: int = 1000
    seed: int = 0
    bootstrap_resamples: int = 200
    confidence: float = 0.95


@dataclass
class LayerMeasures:
    """Per-word table, per-sentence table and the layer's summary values."""

    words: pd.DataFrame
    sentences: pd.DataFrame
    summary: dict[str, Any]


def word_class(word: str) -> str:
    """``stopword`` (scikit-learn's English list, any case), ``content`` (other words with
    a letter), or ``other`` (numbers, punctuation, symbols)."""
    if word.lower() in ENGLISH_STOP_WORDS:
        return "stopword"
    return "content" if any(character.isalpha() for character in word) else "other"


def _run_starts(*keys: np.ndarray) -> np.ndarray:
    """Start positions of runs over which every key array stays constant."""
    if len(keys[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    changes = np.zeros(len(keys[0]), dtype=bool)
    changes[0] = True
    for key in keys:
        changes[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(changes)


def _summarize(
    values: pd.Series,
    baseline: float,
    baseline_replicates: np.ndarray | None,
    settings: MeasureSettings,
    rng: np.random.Generator,
) -> dict[str, float]:
    """Mean of `values` minus a baseline, each with a bootstrap interval.

    An exact baseline (no replicates) has a zero-width interval; the adjusted interval
    pairs each resampled mean with a resampled baseline.
    """
    raw = measures.bootstrap_means(values.to_numpy(), settings.bootstrap_resamples, rng)
    if baseline_replicates is None:
        baseline_replicates = np.full(settings.bootstrap_resamples, baseline)
    mean = float(values.mean()) if len(values) else float("nan")
    summary = {"raw": mean, "baseline": baseline, "adjusted": mean - baseline, "n": len(values)}
    for name, replicates in (
        ("raw", raw),
        ("baseline", baseline_replicates),
        ("adjusted", raw - baseline_replicates),
    ):
        if len(values) and np.isfinite(replicates).all():
            low, high = measures.percentile_interval(replicates, settings.confidence)
        else:
            low = high = float("nan")
        summary[f"{name}_low"], summary[f"{name}_high"] = low, high
    return summary


def measure_layer(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: MeasureSettings,
) -> LayerMeasures:
    """Compute SelfSim, IntraSim, MEV (uncentered and centered) and their baselines.

    vectors: (n_occurrences, d) rows aligned with ``occurrences``; NaN rows are missing.
    The summary's ``measures`` maps a measure name to raw, baseline and adjusted values
    with their intervals (``*_low``, ``*_high``) and ``n``, the words or sentences averaged.
    """
    valid = np.isfinite(vectors).all(axis=1)
    valid &= np.any(vectors != 0, axis=1)
    rows = np.flatnonzero(valid)
    sentence_id = occurrences["sentence_id"].to_numpy()[rows]
    word_id = occurrences["word_id"].to_numpy()[rows]
    kept = vectors if len(rows) == len(vectors) else vectors[rows]
    unit = measures.unit_rows(kept)
    resamples = settings.bootstrap_resamples

    sentence_starts = _run_starts(sentence_id)
    sentence_sizes = measures.group_sizes(sentence_starts, len(rows))
    baseline_cosine = measures.anisotropy_baseline(unit, sentence_starts)
    paper_baseline, paper_replicates = measures.sampled_anisotropy_baseline(
        unit,
        sentence_id,
        settings.baseline_sample_size,
        resamples,
        np.random.default_rng([settings.seed, 0]),
    )
    mev_baselines = {
        centered: measures.explained_variance_baseline(
            kept,
            settings.baseline_sample_size,
            np.random.default_rng([settings.seed, 1]),  # the same sample for both variants
            centered=centered,
            n_draws=resamples,
        )
        for centered in (False, True)
    }

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
    words["word_class"] = [word_class(word) for word in words["word"]]
    words["n"] = measures.group_sizes(word_starts, len(order))
    words["selfsim"] = measures.self_similarity(unit[order], word_starts, context_starts)
    for column, centered in (("mev", False), ("mev_centered", True)):
        words[column] = measures.explained_variance_per_group(kept[order], word_starts, centered)
    words = words[np.isfinite(words["selfsim"])].reset_index(drop=True)
    words["selfsim_adjusted"] = words["selfsim"] - baseline_cosine
    for column, centered in (("mev", False), ("mev_centered", True)):
        words[f"{column}_adjusted"] = words[column] - mev_baselines[centered][0]

    rng = np.random.default_rng([settings.seed, 2])
    cosine = (baseline_cosine, None)
    summaries = {
        "selfsim": (words["selfsim"], *cosine),
        "intrasim": (sentences["intrasim"], *cosine),
        "mev": (words["mev"], *mev_baselines[False]),
        "mev_centered": (words["mev_centered"], *mev_baselines[True]),
    }
    for group in ("stopword", "content"):
        summaries[f"selfsim[{group}]"] = (
            words.loc[words["word_class"] == group, "selfsim"],
            *cosine,
        )
    results = {
        name: _summarize(values, baseline, replicates, settings, rng)
        for name, (values, baseline, replicates) in summaries.items()
    }
    paper_low, paper_high = measures.percentile_interval(paper_replicates, settings.confidence)
    results["anisotropy[sampled]"] = {
        "raw": paper_baseline,
        "raw_low": paper_low,
        "raw_high": paper_high,
        "n": min(settings.baseline_sample_size, len(rows)),
    }
    results["anisotropy"] = {"raw": baseline_cosine, "n": len(rows)}
    # The paper's published "variance explained for random words" (TruncatedSVD ratio),
    # on the same sample as the MEV baseline, for comparison with its numbers.
    size = min(settings.baseline_sample_size, len(rows))
    sample = np.sort(np.random.default_rng([settings.seed, 1]).choice(len(rows), size, False))
    results["mev[truncated_svd]"] = {
        "raw": measures.truncated_svd_variance_ratio(kept[sample]),
        "n": size,
    }
    if len(words) >= 3:
        rho = spearmanr(words["selfsim"], words["count"]).statistic
        results["selfsim~frequency"] = {"raw": float(rho), "n": len(words)}
    summary = {
        "n_occurrences": int(len(vectors)),
        "n_missing": int(len(vectors) - len(rows)),
        "baseline_sample_size": settings.baseline_sample_size,
        "bootstrap_resamples": resamples,
        "confidence": settings.confidence,
        "seed": settings.seed,
        "measures": results,
    }
    return LayerMeasures(words=words, sentences=sentences, summary=summary)


def context_specific_words(layer_words: dict[int, pd.DataFrame], top: int) -> pd.DataFrame:
    """The `top` most and least context-specific words of each layer, by adjusted SelfSim.

    Most context-specific = lowest SelfSim (occurrences least alike across contexts).
    Columns: layer, end (``most`` or ``least``), rank (1 = most extreme), word,
    word_class, count, selfsim, selfsim_adjusted.
    """
    columns = ["word", "word_class", "count", "selfsim", "selfsim_adjusted"]
    parts = []
    for layer, words in sorted(layer_words.items()):
        ordered = words.sort_values(["selfsim_adjusted", "word"], kind="stable")
        for end, chosen in (("most", ordered.head(top)), ("least", ordered.tail(top)[::-1])):
            part = chosen[columns].reset_index(drop=True)
            part.insert(0, "rank", np.arange(1, len(part) + 1))
            part.insert(0, "end", end)
            part.insert(0, "layer", layer)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)
