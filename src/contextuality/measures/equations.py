"""The paper's measures of contextuality (Ethayarajh 2019, §3.2) and anisotropy baselines (§4.1).

The equations alone, as pure functions over numpy arrays. Inputs are occurrence vectors f
(rows) of one layer, grouped into contiguous runs (all occurrences of a word, or all words
of a sentence) described by ``starts`` (see `contextuality.rows`, whose chunked passes
they use). Accumulation is in float64 whatever the input dtype.

Notation: u = f / ‖f‖ is a unit vector; a *context* is a sentence. The shares of variance
along the first principal direction (MEV, Definition 3) are in `contextuality.measures.components`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.measures.components import (
    explained_variance_first_component,
    top_component_share,
    truncated_svd_variance_ratio,
)
from contextuality.rows import (
    complete_group_sums,
    group_sizes,
    run_starts,
    squared_norms,
    unit_rows,
)


def self_similarity(
    vectors: np.ndarray,
    word_starts: np.ndarray,
    context_starts: np.ndarray,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """SelfSim of each word: mean cosine between its occurrences in different contexts.

    SelfSim(w) = Σ_{j,k: s_j≠s_k} u_j·u_k / #{(j,k): s_j≠s_k}
               = (‖Σ_j u_j‖² − Σ_s ‖Σ_{j∈s} u_j‖²) / (n² − Σ_s n_s²)

    exactly, in O(n·d): no pair is formed or sampled. When every occurrence is in its own
    sentence this is the paper's 1/(n²−n) Σ_{j≠k} cos(f_j, f_k).

    vectors: (N, d) rows, scaled to unit length here; ``vectors[order]`` (or `vectors`
    without `order`) sorted by (word, sentence).
    word_starts: first row of each word, shape (n_words,).
    context_starts: first row of each (word, sentence) run; includes every word start.
    Returns (n_words,) float64; NaN for a word seen in only one context.
    """
    return word_self_similarities(vectors, word_starts, context_starts, order=order)[0]


def word_self_similarities(
    vectors: np.ndarray,
    word_starts: np.ndarray,
    context_starts: np.ndarray,
    weights: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`self_similarity` and `paper_self_similarity` of each word from one read of the rows.

    The unit rows are summed by context (a word's run in one sentence, from
    `context_starts`); a word's sum is the sum of its contexts' sums, and, as the rows of a
    context share its sentence and so its weight, the weighted sum of the paper's list is
    Σ_s c_s Σ_{j∈s} u_j. Arguments as `self_similarity`; weights: (N,) per row of
    `vectors`, equal within a context (default 1). Returns two (n_words,) float64 arrays.
    """
    n_rows = len(vectors) if order is None else len(order)
    if weights is None:
        listed = np.ones(n_rows)
    else:
        listed = np.asarray(weights, np.float64)
        listed = listed if order is None else listed[order]
    context_weight = listed[context_starts]
    context_sizes = group_sizes(context_starts, n_rows)
    if np.any(np.repeat(context_weight, context_sizes) != listed):
        raise ValueError("weights must be equal within each context")
    word_of_context = np.searchsorted(word_starts, context_starts, side="right") - 1
    word_sums = np.zeros((len(word_starts), vectors.shape[1]))
    weighted_sums = np.zeros_like(word_sums)
    context_dots = np.empty(len(context_starts))
    for groups, sums in complete_group_sums(vectors, context_starts, order=order, unit=True):
        context_dots[groups] = squared_norms(sums)
        owners = word_of_context[groups]
        bounds = run_starts(owners)
        word_sums[owners[bounds]] += np.add.reduceat(sums, bounds, axis=0)
        weighted = sums * context_weight[groups][:, None]
        weighted_sums[owners[bounds]] += np.add.reduceat(weighted, bounds, axis=0)
    by_word = functools.partial(np.bincount, word_of_context, minlength=len(word_starts))
    n = group_sizes(word_starts, n_rows).astype(np.float64)
    pairs = n**2 - by_word(weights=context_sizes.astype(np.float64) ** 2)
    entries = by_word(weights=context_weight * context_sizes)
    with np.errstate(invalid="ignore", divide="ignore"):
        selfsim = (squared_norms(word_sums) - by_word(weights=context_dots)) / pairs
        paper = (squared_norms(weighted_sums) - entries) / (entries**2 - entries)
    return np.where(pairs > 0, selfsim, np.nan), np.where(entries > 1, paper, np.nan)


@dataclass(frozen=True)
class SentenceSums:
    """Per-dimension sums of a layer's unit rows u by sentence: ``total`` S = Σ_s S_s and
    ``within`` Σ_s S_s², both (d,) float64, S_s the sum of sentence s's unit rows; over `n`
    rows, of which ``same_sentence_pairs`` = Σ_s n_s² ordered pairs share a sentence."""

    total: np.ndarray
    within: np.ndarray
    n: int
    same_sentence_pairs: float

    @classmethod
    def of(cls, total: np.ndarray, within: np.ndarray, sizes: np.ndarray) -> SentenceSums:
        """The sums of sentences of `sizes` (n_sentences,) rows."""
        sizes = np.asarray(sizes, dtype=np.float64)
        return cls(total, within, int(sizes.sum()), float(np.sum(sizes**2)))

    def cosine_contributions(self) -> np.ndarray:
        """C_i = (S_i² − Σ_s S_{s,i}²) / (N² − Σ_s n_s²) (d,): dimension i's part of the
        expected cosine of two occurrences from different sentences; NaN without such a pair."""
        pairs = float(self.n) ** 2 - self.same_sentence_pairs
        if pairs <= 0:
            return np.full(len(self.total), np.nan)
        return (self.total**2 - self.within) / pairs

    def expected_cosine(self) -> float:
        """The exact anisotropy baseline, Σ_i C_i (`anisotropy_baseline`); NaN when every
        occurrence shares one sentence."""
        return float(self.cosine_contributions().sum())


def sentence_statistics(
    vectors: np.ndarray, sentence_starts: np.ndarray
) -> tuple[np.ndarray, SentenceSums]:
    """IntraSim of each sentence (`intra_similarity`) and the `SentenceSums` of the unit rows,
    from one read of the rows: the raw and the unit sums of each sentence come together.

    vectors: (N, d) raw (not normalized) word vectors, sentences contiguous, each row finite
    and non-zero. Returns ((n_sentences,) float64, SentenceSums).
    """
    dim = vectors.shape[1]
    sizes = group_sizes(sentence_starts, len(vectors))
    cosine_sums = np.empty(len(sizes))
    total, within = np.zeros(dim), np.zeros(dim)
    for groups, both in complete_group_sums(vectors, sentence_starts, with_unit=True):
        sums, unit_sums = both[:, :dim], both[:, dim:]
        cosine_sums[groups] = np.einsum("ij,ij->i", unit_sums, sums) / np.sqrt(squared_norms(sums))
        total += unit_sums.sum(axis=0)
        within += np.einsum("ij,ij->j", unit_sums, unit_sums)
    return cosine_sums / sizes, SentenceSums.of(total, within, sizes)


def intra_similarity(vectors: np.ndarray, sentence_starts: np.ndarray) -> np.ndarray:
    """IntraSim of each sentence: mean cosine of its word vectors with their mean.

    IntraSim(s) = 1/n Σ_i cos(f_i, s̄) = (Σ_i u_i)·s̄ / (n ‖s̄‖),  s̄ = 1/n Σ_i f_i
    (paper §3.2, Definition 2), from two sums per sentence (`sentence_statistics`).

    vectors: (N, d) raw (not normalized) word vectors, sentences contiguous, each row finite
    and non-zero. Returns (n_sentences,) float64.
    """
    return sentence_statistics(vectors, sentence_starts)[0]


def paper_self_similarity(
    vectors: np.ndarray,
    word_starts: np.ndarray,
    weights: np.ndarray,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """The paper's SelfSim of each word: mean cosine over all ordered pairs of distinct
    entries of its occurrence list, where occurrence j is listed `weights[j]` times (once per
    copy of its sentence in the corpus).

    SelfSim_paper(w) = (‖Σ_j c_j u_j‖² − Σ_j c_j) / (C² − C),  C = Σ_j c_j.

    This is the exact expectation of the authors' estimate (the mean over ≤ 1,000 pairs
    drawn from that list): pairs within one sentence and between copies of a repeated
    sentence count, unlike in `self_similarity`. vectors: (N, d) rows, scaled to unit length
    here, words contiguous in ``vectors[order]``; weights: (N,) per row of `vectors`.
    Returns (n_words,) float64; NaN for a word listed once.
    """
    each_row = np.arange(len(vectors) if order is None else len(order))  # its own context
    return word_self_similarities(vectors, word_starts, each_row, weights, order)[1]


def anisotropy_baseline(vectors: np.ndarray, sentence_starts: np.ndarray) -> float:
    """Exact expected cosine of two random word occurrences from different sentences.

    E[cos] = (‖Σ_i u_i‖² − Σ_s ‖Σ_{i∈s} u_i‖²) / (N² − Σ_s n_s²)

    over all ordered pairs of occurrences in different sentences (paper §4.1 estimates
    this from 1,000 sampled occurrences). vectors: (N, d) rows, scaled to unit length here,
    sentences contiguous from ``sentence_starts[0] == 0``.
    """
    return sentence_sums(vectors, sentence_starts, unit=True).expected_cosine()


def sentence_sums(vectors: np.ndarray, sentence_starts: np.ndarray, unit: bool) -> SentenceSums:
    """The `SentenceSums` of rows (N, d), sentences contiguous: S = Σ_s S_s and Σ_s S_s²,
    squared per dimension, S_s the sum of sentence s's rows (unit-scaled with `unit`), one
    chunk's sentence sums held at a time."""
    total = np.zeros(vectors.shape[1])
    within = np.zeros(vectors.shape[1])
    for _, sums in complete_group_sums(vectors, sentence_starts, unit=unit):
        total += sums.sum(axis=0)
        within += np.einsum("ij,ij->j", sums, sums)
    return SentenceSums.of(total, within, group_sizes(sentence_starts, len(vectors)))


def explained_variance_baseline(
    vectors: np.ndarray,
    sample_size: int,
    rng: np.random.Generator,
    centered: bool = False,
    n_draws: int = 0,
) -> np.ndarray:
    """MEV of a uniform random sample (without replacement) of `sample_size` occurrences
    (paper §4.1), then of `n_draws` further independent samples of the same size: shape
    (1 + n_draws,).

    The estimates are the estimator's sampling distribution: their mean is the baseline
    and their percentiles its interval (`summary.Baseline.sampled`). (A bootstrap that
    resamples one sample with replacement would not do: repeated rows inflate the first
    component's share.)
    """
    size = min(sample_size, len(vectors))

    def draw() -> np.ndarray:
        return np.sort(rng.choice(len(vectors), size=size, replace=False))

    first = explained_variance_first_component(vectors[draw()], centered)
    further = [top_component_share(vectors[draw()], centered) for _ in range(n_draws)]
    return np.array([first, *further])


PAPER_SAMPLE_ESTIMATES = ("anisotropy", "intrasim", "truncated_svd")


def paper_word_sample(
    sentence_starts: np.ndarray, n_rows: int, copies: np.ndarray, sample_size: int, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's random words (its ``explore_embedding_space``): `sample_size` sentences
    drawn uniformly without replacement from the corpus's list of sentences, in which a
    sentence is listed once per copy, then one word drawn uniformly from each.

    sentence_starts: first row of each sentence (its rows contiguous, at least one).
    copies: (n_sentences,) times the corpus repeats each sentence.
    Returns the drawn sentences (positions in `sentence_starts`) and their drawn rows.
    """
    sizes = group_sizes(sentence_starts, n_rows)
    listed = np.repeat(np.arange(len(sizes)), np.asarray(copies, dtype=np.int64))
    drawn = rng.choice(listed, size=min(sample_size, len(listed)), replace=False)
    return drawn, sentence_starts[drawn] + rng.integers(0, sizes[drawn])


def paper_sample_estimates(
    vectors: np.ndarray,
    intrasim: np.ndarray,
    sentence_starts: np.ndarray,
    copies: np.ndarray,
    sample_size: int,
    rng: Any,
) -> np.ndarray:
    """The paper's three sampled layer statistics from one `paper_word_sample`, in the order
    of PAPER_SAMPLE_ESTIMATES:

    - anisotropy: ‖Σ_a u_a‖² / m² over the m sampled words, the exact expectation of the
      authors' mean cosine of 1,000 pairs drawn with replacement from them (a pair of a word
      with itself, probability 1/m, included as in their code);
    - intrasim: the mean IntraSim of the sampled sentences (`intrasim`: (n_sentences,), 1
      for a one-word sentence, as their code gave it);
    - truncated_svd: `truncated_svd_variance_ratio` of the sampled words' raw vectors.
    """
    drawn, rows = paper_word_sample(sentence_starts, len(vectors), copies, sample_size, rng)
    total = unit_rows(vectors[rows]).sum(axis=0, dtype=np.float64)
    return np.array(
        [
            float(total @ total) / len(rows) ** 2,
            float(np.mean(intrasim[drawn])),
            truncated_svd_variance_ratio(vectors[rows]),
        ]
    )
