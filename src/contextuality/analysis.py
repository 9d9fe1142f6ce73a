"""All measures of one (model, layer) shard: per-word, per-sentence and summary values.

Which occurrences count: rows with a vector (finite, not all zero). SelfSim and MEV are
computed for indexed words with at least two such occurrences; IntraSim for sentences with
at least two words.

Two families of estimators are reported side by side:

- exact, from the paper's definitions: SelfSim over pairs of occurrences in different
  sentences, IntraSim over every sentence, MEV as σ₁²/Σσ² (uncentered, and centered), the
  anisotropy baseline as the exact mean cosine of occurrences in different sentences, the
  MEV baseline as the MEV of a uniform sample of occurrences;
- the paper's (``[paper]``, ``[truncated_svd]``), what its published numbers computed:
  SelfSim over all pairs of a word's listed occurrences (repeated sentences kept), the
  TruncatedSVD variance ratio per word, and the anisotropy, IntraSim and TruncatedSVD
  baselines from 1,000 sentences drawn uniformly with one word each.

Adjusted value = raw − baseline (paper §4.1), each family with its own baseline. Every
summary value carries an interval: a percentile bootstrap over words or sentences for a raw
mean, and the spread of independent samples for a sampled estimate.
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
# Per-word measure column → (summary name, family of its baseline).
WORD_MEASURES = {
    "selfsim": ("selfsim", "cosine"),
    "selfsim_paper": ("selfsim[paper]", "paper_cosine"),
    "mev": ("mev", "mev"),
    "mev_centered": ("mev_centered", "mev_centered"),
    "mev_truncated_svd": ("mev[truncated_svd]", "truncated_svd"),
}


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


@dataclass(frozen=True)
class Baseline:
    """A baseline value and, for a sampled one, its replicates (None: exact)."""

    value: float
    replicates: np.ndarray | None = None


def word_class(word: str) -> str:
    """``stopword`` (scikit-learn's English list, any case), ``content`` (other words with
    a letter), or ``other`` (numbers, punctuation, symbols)."""
    if word.lower() in ENGLISH_STOP_WORDS:
        return "stopword"
    return "content" if any(character.isalpha() for character in word) else "other"


def _interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    if len(replicates) and np.isfinite(replicates).all():
        return measures.percentile_interval(replicates, level)
    return float("nan"), float("nan")


def _summarize(
    values: pd.Series,
    baseline: Baseline,
    settings: MeasureSettings,
    rng: np.random.Generator,
) -> dict[str, float]:
    """Mean of `values` (NaN skipped) minus a baseline, each with an interval.

    The raw interval is a bootstrap over the values. An exact baseline (no replicates) has
    a zero-width interval; the adjusted interval pairs each resampled mean with a baseline
    replicate.
    """
    values = values.dropna()
    raw = measures.bootstrap_means(values.to_numpy(), settings.bootstrap_resamples, rng)
    replicates = baseline.replicates
    if replicates is None:
        replicates = np.full(settings.bootstrap_resamples, baseline.value)
    mean = float(values.mean()) if len(values) else float("nan")
    summary = {
        "raw": mean,
        "baseline": baseline.value,
        "adjusted": mean - baseline.value,
        "n": len(values),
    }
    for name, draws in (("raw", raw), ("baseline", replicates), ("adjusted", raw - replicates)):
        summary[f"{name}_low"], summary[f"{name}_high"] = _interval(
            draws if len(values) else np.zeros(0), settings.confidence
        )
    return summary


def _sampled(draws: np.ndarray, n: int, level: float, baseline: np.ndarray | None = None) -> dict:
    """A sampled statistic: ``draws[0]`` is the estimate and ``draws[1:]`` independent
    replicates giving its interval. With `baseline` (drawn from the same samples), also the
    baseline and the adjusted value, whose interval pairs the replicates sample by sample."""
    parts = [("raw", draws)]
    if baseline is not None:
        parts += [("baseline", baseline), ("adjusted", draws - baseline)]
    summary: dict[str, float] = {"n": n}
    for name, values in parts:
        summary[name] = float(values[0])
        summary[f"{name}_low"], summary[f"{name}_high"] = _interval(values[1:], level)
    return summary


@dataclass(frozen=True)
class _Rows:
    """The occurrences of a shard that have a vector, in occurrence order."""

    vectors: np.ndarray  # (n, d) as stored
    unit: np.ndarray  # (n, d) float32, unit rows
    sentence_id: np.ndarray
    word_id: np.ndarray
    copies: np.ndarray  # times the corpus repeats each row's sentence


def _valid_rows(
    vectors: np.ndarray, occurrences: pd.DataFrame, sentence_copies: np.ndarray
) -> _Rows:
    valid = np.isfinite(vectors).all(axis=1) & np.any(vectors != 0, axis=1)
    rows = np.flatnonzero(valid)
    kept = vectors if len(rows) == len(vectors) else vectors[rows]
    sentence_id = occurrences["sentence_id"].to_numpy()[rows]
    return _Rows(
        vectors=kept,
        unit=measures.unit_rows(kept),
        sentence_id=sentence_id,
        word_id=occurrences["word_id"].to_numpy()[rows],
        copies=np.asarray(sentence_copies, dtype=np.int64)[sentence_id],
    )


def _word_table(rows: _Rows, vocab: pd.DataFrame) -> pd.DataFrame:
    """Per indexed word: its vocabulary columns, class, occurrence counts and raw measures."""
    indexed = vocab["indexed"].to_numpy()[rows.word_id]
    chosen = np.flatnonzero(indexed)
    order = chosen[np.lexsort((rows.sentence_id[chosen], rows.word_id[chosen]))]
    word_starts = measures.run_starts(rows.word_id[order])
    context_starts = measures.run_starts(rows.word_id[order], rows.sentence_id[order])
    columns = ["word", "count", "count_with_repeats", "n_contexts", "frequency_rank"]
    words = vocab.set_index("word_id").loc[rows.word_id[order][word_starts], columns]
    words = words.reset_index()
    words["word_class"] = [word_class(word) for word in words["word"]]
    words["n"] = measures.group_sizes(word_starts, len(order))
    words["n_with_repeats"] = np.add.reduceat(rows.copies[order], word_starts)
    unit = rows.unit[order]
    words["selfsim"] = measures.self_similarity(unit, word_starts, context_starts)
    words["selfsim_paper"] = measures.paper_self_similarity(unit, word_starts, rows.copies[order])
    statistics = measures.first_component_statistics(
        rows.vectors[order], word_starts, rows.copies[order]
    )
    words["mev"] = statistics.mev
    words["mev_centered"] = statistics.mev_centered
    words["mev_truncated_svd"] = statistics.truncated_svd
    return words[words["n"] >= 2].reset_index(drop=True)


def _sentence_table(
    rows: _Rows, sentence_starts: np.ndarray, intrasim: np.ndarray, cosine: float
) -> pd.DataFrame:
    """Per sentence of two or more words: its IntraSim, raw and adjusted by `cosine`."""
    sizes = measures.group_sizes(sentence_starts, len(rows.unit))
    multi_word = sizes >= 2
    return pd.DataFrame(
        {
            "sentence_id": rows.sentence_id[sentence_starts[multi_word]],
            "n_words": sizes[multi_word],
            "intrasim": intrasim[multi_word],
            "intrasim_adjusted": intrasim[multi_word] - cosine,
        }
    )


def _baselines(
    rows: _Rows,
    sentence_starts: np.ndarray,
    intrasim: np.ndarray,
    cosine: float,
    settings: MeasureSettings,
) -> tuple[dict[str, Baseline], np.ndarray]:
    """Every baseline, by family, and the paper's sampled statistics.

    The paper's statistics come as an array (1 + bootstrap_resamples, 3): the estimates
    from one sample of sentences (row 0), then independent samples for their spread, in the
    order of `measures.PAPER_SAMPLE_ESTIMATES`.
    """
    size, draws = settings.baseline_sample_size, settings.bootstrap_resamples
    paper_rng = np.random.default_rng([settings.seed, 3])
    copies = rows.copies[sentence_starts]
    paper = np.array(
        [
            measures.paper_sample_estimates(
                rows.vectors, rows.unit, intrasim, sentence_starts, copies, size, paper_rng
            )
            for _ in range(draws + 1)
        ]
    )
    baselines = {
        "cosine": Baseline(cosine),
        "paper_cosine": Baseline(paper[0, 0], paper[1:, 0]),
        "truncated_svd": Baseline(paper[0, 2], paper[1:, 2]),
    }
    for name in ("mev", "mev_centered"):
        baselines[name] = Baseline(
            *measures.explained_variance_baseline(
                rows.vectors,
                size,
                np.random.default_rng([settings.seed, 1]),  # one sample for both variants
                centered=name == "mev_centered",
                n_draws=draws,
            )
        )
    return baselines, paper


def measure_layer(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: MeasureSettings,
    sentence_copies: np.ndarray | None = None,
) -> LayerMeasures:
    """Compute every measure of one layer, exact and as the paper estimated it.

    vectors: (n_occurrences, d) rows aligned with ``occurrences``; NaN rows are missing.
    sentence_copies: times the corpus repeats each sentence (by sentence_id; default once).
    The summary's ``measures`` maps a measure name to raw, baseline and adjusted values
    with their intervals (``*_low``, ``*_high``) and ``n``, the words, sentences or sampled
    occurrences behind it.
    """
    if sentence_copies is None:
        sentence_copies = np.ones(int(occurrences["sentence_id"].to_numpy().max(initial=-1)) + 1)
    rows = _valid_rows(vectors, occurrences, sentence_copies)
    sentence_starts = measures.run_starts(rows.sentence_id)
    intrasim = measures.intra_similarity(rows.vectors, sentence_starts)
    cosine = measures.anisotropy_baseline(rows.unit, sentence_starts)
    sentences = _sentence_table(rows, sentence_starts, intrasim, cosine)
    baselines, paper = _baselines(rows, sentence_starts, intrasim, cosine, settings)
    words = _word_table(rows, vocab)
    for column, (_, family) in WORD_MEASURES.items():
        words[f"{column}_adjusted"] = words[column] - baselines[family].value

    rng = np.random.default_rng([settings.seed, 2])
    results = {
        name: _summarize(words[column], baselines[family], settings, rng)
        for column, (name, family) in WORD_MEASURES.items()
    }
    results["intrasim"] = _summarize(sentences["intrasim"], baselines["cosine"], settings, rng)
    n_sampled = min(settings.baseline_sample_size, int(rows.copies[sentence_starts].sum()))
    results["intrasim[paper]"] = _sampled(paper[:, 1], n_sampled, settings.confidence, paper[:, 0])
    for group in ("stopword", "content"):
        results[f"selfsim[{group}]"] = _summarize(
            words.loc[words["word_class"] == group, "selfsim"], baselines["cosine"], settings, rng
        )
    results["anisotropy"] = {"raw": cosine, "n": len(rows.unit)}
    results["anisotropy[paper]"] = _sampled(paper[:, 0], n_sampled, settings.confidence)
    if words["selfsim"].notna().sum() >= 3:
        rho = spearmanr(words["selfsim"], words["count"], nan_policy="omit").statistic
        results["selfsim~frequency"] = {"raw": float(rho), "n": int(words["selfsim"].notna().sum())}
    summary = {
        "n_occurrences": int(len(vectors)),
        "n_missing": int(len(vectors) - len(rows.unit)),
        "baseline_sample_size": settings.baseline_sample_size,
        "bootstrap_resamples": settings.bootstrap_resamples,
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
