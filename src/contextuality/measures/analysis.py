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

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality.measures import components, equations, isotropy
from contextuality.measures.positions import position_profile
from contextuality.measures.ranks import spearman_correlation
from contextuality.measures.rows import (
    group_sizes,
    keep_rows,
    row_chunks,
    rows_with_vectors,
    run_starts,
)
from contextuality.measures.summary import (
    Baseline,
    mean_summary,
    sampled_summary,
    skip_mean_summary,
)
from contextuality.random_streams import generator

# Per-word measure column → (summary name, family of its baseline).
WORD_MEASURES = {
    "selfsim": ("selfsim", "cosine"),
    "selfsim_paper": ("selfsim[paper]", "paper_cosine"),
    "mev": ("mev", "mev"),
    "mev_centered": ("mev_centered", "mev_centered"),
    "mev_truncated_svd": ("mev[truncated_svd]", "truncated_svd"),
}
# Where a per-word measure has a value, as another column of the table shows: SelfSim[paper]
# for every word of two or more occurrences, the TruncatedSVD ratio where the centered
# variance is not 0.
_PRESENT_WITH = {"selfsim_paper": "n", "mev_truncated_svd": "mev_centered"}


@dataclass(frozen=True)
class MeasureSettings:
    """Settings of the measure step (config section ``measures``)."""

    baseline_sample_size: int = 1000
    seed: int = 0
    bootstrap_resamples: int = 200
    sample_replicates: int = 50
    confidence: float = 0.95
    isoscore_shrinkage: float = 0.2
    isotropy_samples: int = 20


@dataclass
class LayerMeasures:
    """Per-word table, per-sentence table and the layer's summary values."""

    words: pd.DataFrame
    sentences: pd.DataFrame
    summary: dict[str, Any]
    positions: pd.DataFrame | None = None  # `positions.position_profile`


@functools.cache
def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list, read from its module file: importing
    scikit-learn itself would cost every measure job over a second."""
    package = importlib.util.find_spec("sklearn")
    path = Path(package.origin).parent / "feature_extraction" / "_stop_words.py"
    spec = importlib.util.spec_from_file_location("sklearn_english_stop_words", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.ENGLISH_STOP_WORDS)


def word_class(word: str) -> str:
    """``stopword`` (scikit-learn's English list, any case), ``content`` (other words with
    a letter), or ``other`` (numbers, punctuation, symbols)."""
    if word.lower() in english_stop_words():
        return "stopword"
    return "content" if any(character.isalpha() for character in word) else "other"


@dataclass(frozen=True)
class _Rows:
    """The occurrences of a shard that have a vector, in occurrence order."""

    vectors: np.ndarray  # (n, d) as stored (float16 or float32)
    sentence_id: np.ndarray
    word_id: np.ndarray
    copies: np.ndarray  # times the corpus repeats each row's sentence
    position: np.ndarray  # the word's position in its sentence (0: the first)

    def kept(self, keep: np.ndarray, overwrite: bool) -> _Rows:
        """The rows of bool mask `keep`; with `overwrite`, moved up in place in `vectors`
        (`rows.keep_rows`) instead of copied."""
        if keep.all():
            return self
        vectors = keep_rows(self.vectors, keep) if overwrite else self.vectors[keep]
        return _Rows(
            vectors,
            self.sentence_id[keep],
            self.word_id[keep],
            self.copies[keep],
            self.position[keep],
        )


def _valid_rows(
    vectors: np.ndarray, occurrences: pd.DataFrame, sentence_copies: np.ndarray, overwrite: bool
) -> _Rows:
    """The rows with a vector (`_Rows.kept`)."""
    sentence_id = occurrences["sentence_id"].to_numpy()
    every = _Rows(
        vectors=vectors,
        sentence_id=sentence_id,
        word_id=occurrences["word_id"].to_numpy(),
        copies=np.asarray(sentence_copies, dtype=np.int64)[sentence_id],
        position=occurrences["position"].to_numpy(),
    )
    return every.kept(rows_with_vectors(vectors), overwrite)


def word_rows(vocab: pd.DataFrame, word_ids: np.ndarray) -> pd.DataFrame:
    """The first columns of a per-word table: each word's id, its vocabulary columns
    (word, count, count_with_repeats, n_contexts, frequency_rank) and `word_class`."""
    columns = ["word", "count", "count_with_repeats", "n_contexts", "frequency_rank"]
    words = vocab.set_index("word_id").loc[word_ids, columns].reset_index()
    words["word_class"] = [word_class(word) for word in words["word"]]
    return words


def _word_table(rows: _Rows, vocab: pd.DataFrame, first_components: bool = True) -> pd.DataFrame:
    """Per indexed word: its vocabulary columns, class, occurrence counts and raw measures
    (without `first_components`, SelfSim alone: no MEV)."""
    indexed = vocab["indexed"].to_numpy()[rows.word_id]
    chosen = np.flatnonzero(indexed)
    order = chosen[np.lexsort((rows.sentence_id[chosen], rows.word_id[chosen]))]
    word_starts = run_starts(rows.word_id[order])
    context_starts = run_starts(rows.word_id[order], rows.sentence_id[order])
    words = word_rows(vocab, rows.word_id[order][word_starts])
    words["n"] = group_sizes(word_starts, len(order))
    words["n_with_repeats"] = np.add.reduceat(rows.copies[order], word_starts)
    words["selfsim"], words["selfsim_paper"] = equations.word_self_similarities(
        rows.vectors, word_starts, context_starts, rows.copies, order
    )
    if not first_components:
        return words[words["n"] >= 2].reset_index(drop=True)
    statistics = components.first_component_statistics(
        rows.vectors, word_starts, rows.copies, order
    )
    words["mev"] = statistics.mev
    words["mev_centered"] = statistics.mev_centered
    words["mev_truncated_svd"] = statistics.truncated_svd
    return words[words["n"] >= 2].reset_index(drop=True)


def _sentence_table(
    rows: _Rows, sentence_starts: np.ndarray, intrasim: np.ndarray, cosine: float
) -> pd.DataFrame:
    """Per sentence of two or more words: its IntraSim, raw and adjusted by `cosine`."""
    sizes = group_sizes(sentence_starts, len(rows.vectors))
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

    The paper's statistics come as an array (1 + sample_replicates, 3): their estimates on
    independent samples of sentences, one row each, in the order of
    `equations.PAPER_SAMPLE_ESTIMATES`; a sampled baseline is the mean of its estimates.
    """
    size, draws = settings.baseline_sample_size, settings.sample_replicates
    paper_rng = generator(settings.seed, "paper_sample")
    copies = rows.copies[sentence_starts]
    paper = np.array(
        [
            equations.paper_sample_estimates(
                rows.vectors, intrasim, sentence_starts, copies, size, paper_rng
            )
            for _ in range(draws + 1)
        ]
    )
    baselines = {
        "cosine": Baseline(cosine),
        "paper_cosine": Baseline.sampled(paper[:, 0]),
        "truncated_svd": Baseline.sampled(paper[:, 2]),
    }
    for name in ("mev", "mev_centered"):
        baselines[name] = Baseline.sampled(
            equations.explained_variance_baseline(
                rows.vectors,
                size,
                generator(settings.seed, "mev_baseline"),  # one sample for both variants
                centered=name == "mev_centered",
                n_draws=draws,
            )
        )
    return baselines, paper


def _scatter(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean (d,) and centered scatter matrix Σ_k (x_k − μ)(x_k − μ)ᵀ (d, d) of rows (n, d),
    both float64: the mean in float64, each chunk's product in float32 (BLAS), chunks summed
    in float64; centering first keeps a large common mean from cancelling digits."""
    chunks = list(row_chunks(*vectors.shape))
    mean = np.zeros(vectors.shape[1])
    for chunk in chunks:
        mean += vectors[chunk].sum(axis=0, dtype=np.float64)
    mean /= len(vectors)
    scatter = np.zeros((vectors.shape[1], vectors.shape[1]))
    for chunk in chunks:
        centered = (vectors[chunk] - mean).astype(np.float32)
        scatter += centered.T @ centered
    return mean, scatter


def _log_partition_both_signs(vectors: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """log Z(c) and log Z(−c) (2, k) for the columns c of `directions` (d, k) over rows
    (n, d): projections and their exponentials in float32 chunks, shifted by the chunk's
    maximum so that large norms do not overflow, summed in float64; chunks combined with
    logaddexp."""
    log_z = np.full((2, directions.shape[1]), -np.inf)
    basis = directions.astype(np.float32)
    for chunk in row_chunks(*vectors.shape):
        projections = np.asarray(vectors[chunk], dtype=np.float32) @ basis
        for sign, signed in enumerate((projections, -projections)):
            top = signed.max(axis=0)
            sums = np.exp(signed - top).sum(axis=0, dtype=np.float64)
            log_z[sign] = np.logaddexp(log_z[sign], top + np.log(sums))
    return log_z


def layer_isotropy(
    vectors: np.ndarray,
    sentence_sums: equations.SentenceSums,
    settings: MeasureSettings,
    rng: np.random.Generator,
) -> dict[str, dict[str, Any]]:
    """Isotropy scores of one layer's occurrence vectors, as summary measures.

    vectors: (n, d) rows with a vector; sentence_sums: their unit rows' sums by sentence
    (`equations.sentence_statistics`). Exact for these rows (one centered
    scatter matrix serves all of them, see `contextuality.measures.isotropy` for the definitions):
    ``isoscore``, ``effective_rank``, ``partition_ratio`` (I(W) over the eigenvectors of the
    uncentered Gram matrix and their negations) and ``rogue_share[k]``, the share of the
    expected cosine owed to the top k = 1..3 dimensions (named in ``dimensions``). Sampled:
    ``isoscore*`` on `isotropy_samples` samples of `baseline_sample_size` rows, each
    covariance shrunk toward the covariance of all rows by `isoscore_shrinkage`; the
    samples' mean is the value and their spread its interval.
    """
    n = len(vectors)
    mean, scatter = _scatter(vectors)
    covariance = scatter / n
    eigenvalues = np.clip(np.linalg.eigvalsh(covariance)[::-1], 0.0, None)
    roots = np.sqrt(eigenvalues)
    shares = roots[roots > 0] / roots.sum()
    _, directions = np.linalg.eigh(scatter + n * np.outer(mean, mean))
    log_z = _log_partition_both_signs(vectors, directions)
    results: dict[str, dict[str, Any]] = {
        "isoscore": {"raw": isotropy.isoscore_from_eigenvalues(eigenvalues), "n": n},
        "effective_rank": {"raw": float(np.exp(-np.sum(shares * np.log(shares)))), "n": n},
        "partition_ratio": {"raw": float(np.exp(log_z.min() - log_z.max())), "n": n},
    }
    size = min(settings.baseline_sample_size, n)
    draws = np.array(
        [
            isotropy.isoscore_star(
                vectors[np.sort(rng.choice(n, size=size, replace=False))],
                settings.isoscore_shrinkage,
                covariance,
            )
            for _ in range(settings.isotropy_samples)
        ]
    )
    results["isoscore*"] = sampled_summary(draws, size, settings.confidence)
    rogue = isotropy.rogue_dimensions_of(sentence_sums, top=3)
    for k in range(1, 4):
        results[f"rogue_share[{k}]"] = {
            "raw": rogue.share(k),
            "n": n,
            "dimensions": ",".join(str(dimension) for dimension in rogue.dimensions[:k]),
        }
    return results


def measure_layer(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: MeasureSettings,
    sentence_copies: np.ndarray | None = None,
    overwrite: bool = False,
    positions: bool = False,
) -> LayerMeasures:
    """Compute every measure of one layer, exact and as the paper estimated it.

    vectors: (n_occurrences, d) rows aligned with ``occurrences``; NaN rows are missing.
    sentence_copies: times the corpus repeats each sentence (by sentence_id; default once).
    overwrite: drop the missing rows in place, overwriting `vectors`, rather than copy the
    others (the layer is then held once). With `positions`, also the position profile
    (`positions.position_profile`) and the ``[position>0]`` measures. The summary's
    ``measures`` maps a measure name
    to raw, baseline and adjusted values with their intervals (``*_low``, ``*_high``) and
    ``n``, the words, sentences or sampled occurrences behind it.
    """
    if sentence_copies is None:
        sentence_copies = np.ones(int(occurrences["sentence_id"].to_numpy().max(initial=-1)) + 1)
    n_occurrences = len(vectors)
    rows = _valid_rows(vectors, occurrences, sentence_copies, overwrite)
    sentence_starts = run_starts(rows.sentence_id)
    intrasim, sentence_sums = equations.sentence_statistics(rows.vectors, sentence_starts)
    cosine = sentence_sums.expected_cosine()
    sentences = _sentence_table(rows, sentence_starts, intrasim, cosine)
    baselines, paper = _baselines(rows, sentence_starts, intrasim, cosine, settings)
    words = _word_table(rows, vocab)
    adjust_word_measures(words, baselines)

    results = summarize_layer(words, sentences, baselines, len(rows.vectors), settings)
    n_sampled = min(settings.baseline_sample_size, int(rows.copies[sentence_starts].sum()))
    level = settings.confidence
    results["intrasim[paper]"] = sampled_summary(paper[:, 1], n_sampled, level, paper[:, 0])
    results["anisotropy[paper]"] = sampled_summary(paper[:, 0], n_sampled, level)
    results.update(
        layer_isotropy(
            rows.vectors,
            sentence_sums,
            settings,
            generator(settings.seed, "isotropy_samples"),
        )
    )
    profile = None
    if positions:
        profile = position_profile(rows.vectors, rows.position, rows.sentence_id)
        # Last, as with `overwrite` it drops the first words' rows in place.
        results.update(_without_first_words(rows, vocab, settings, overwrite))
    summary = {**summary_header(settings, n_occurrences, len(rows.vectors)), "measures": results}
    return LayerMeasures(words=words, sentences=sentences, summary=summary, positions=profile)


def _without_first_words(
    rows: _Rows, vocab: pd.DataFrame, settings: MeasureSettings, overwrite: bool
) -> dict[str, dict[str, Any]]:
    """SelfSim, IntraSim (each adjusted) and the anisotropy baseline, exact, over the
    occurrences past each sentence's first word (``[position>0]``): decoders put vectors
    of huge norm there, which dominate a layer's mean and its cosine baseline."""
    later = rows.kept(rows.position > 0, overwrite)
    starts = run_starts(later.sentence_id)
    intrasim, sums = equations.sentence_statistics(later.vectors, starts)
    baseline = Baseline(sums.expected_cosine())
    sentences = _sentence_table(later, starts, intrasim, baseline.value)
    words = _word_table(later, vocab, first_components=False)
    resamples, level = settings.bootstrap_resamples, settings.confidence
    rng = generator(settings.seed, "position_bootstrap")
    return {
        "selfsim[position>0]": mean_summary(words["selfsim"], baseline, resamples, level, rng),
        "intrasim[position>0]": mean_summary(
            sentences["intrasim"], baseline, resamples, level, rng
        ),
        "anisotropy[position>0]": {"raw": baseline.value, "n": len(later.vectors)},
    }


def adjust_word_measures(words: pd.DataFrame, baselines: dict[str, Baseline]) -> None:
    """Add ``<measure>_adjusted`` = raw − baseline beside each per-word measure of
    `WORD_MEASURES` the table has, each by its own family's baseline."""
    for column, (_, family) in WORD_MEASURES.items():
        if column in words:
            words[f"{column}_adjusted"] = words[column] - baselines[family].value


def summarize_layer(
    words: pd.DataFrame,
    sentences: pd.DataFrame,
    baselines: dict[str, Baseline],
    n_valid: int,
    settings: MeasureSettings,
) -> dict[str, dict[str, Any]]:
    """The summary measures of every layer, stored or streamed: each per-word measure of
    `WORD_MEASURES` that `words` has, IntraSim, and SelfSim of stopwords and of content
    words, each a mean with a bootstrap interval drawn, in that order, from the bootstrap
    stream; the exact anisotropy baseline (``baselines["cosine"]``, over `n_valid`
    occurrences); and the Spearman ρ of SelfSim with word frequency.

    A per-word measure the table lacks (a streamed layer's) has its draws skipped as if it
    had values where `_PRESENT_WITH` says, so that the later intervals are the same numbers
    as a stored layer's.
    """
    resamples, level = settings.bootstrap_resamples, settings.confidence
    rng = generator(settings.seed, "bootstrap")
    results = {}
    for column, (name, family) in WORD_MEASURES.items():
        if column in words:
            results[name] = mean_summary(words[column], baselines[family], resamples, level, rng)
        else:
            present = int(words[_PRESENT_WITH[column]].notna().sum())
            skip_mean_summary(present, resamples, rng)
    results["intrasim"] = mean_summary(
        sentences["intrasim"], baselines["cosine"], resamples, level, rng
    )
    for group in ("stopword", "content"):
        chosen = words.loc[words["word_class"] == group, "selfsim"]
        results[f"selfsim[{group}]"] = mean_summary(
            chosen, baselines["cosine"], resamples, level, rng
        )
    results["anisotropy"] = {"raw": baselines["cosine"].value, "n": n_valid}
    if words["selfsim"].notna().sum() >= 3:
        rho = spearman_correlation(words["selfsim"], words["count"])
        results["selfsim~frequency"] = {"raw": rho, "n": int(words["selfsim"].notna().sum())}
    return results


def summary_header(settings: MeasureSettings, n_occurrences: int, n_valid: int) -> dict[str, Any]:
    """What a layer summary records of its rows and settings, before its ``measures``."""
    return {
        "n_occurrences": n_occurrences,
        "n_missing": n_occurrences - n_valid,
        "baseline_sample_size": settings.baseline_sample_size,
        "bootstrap_resamples": settings.bootstrap_resamples,
        "sample_replicates": settings.sample_replicates,
        "isoscore_shrinkage": settings.isoscore_shrinkage,
        "confidence": settings.confidence,
        "seed": settings.seed,
    }


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
