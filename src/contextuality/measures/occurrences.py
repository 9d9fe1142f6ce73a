"""A layer's occurrences that have a vector, and the per-word and per-sentence tables
built from them (the raw values of SelfSim, MEV and IntraSim, paper Definitions 1–3).

Which occurrences count: rows with a vector (finite, not all zero). SelfSim and MEV are
computed for indexed words with at least two such occurrences; IntraSim for sentences with
at least two words.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from contextuality.measures import components, equations
from contextuality.rows import (
    group_sizes,
    keep_rows,
    rows_with_vectors,
    run_starts,
)


@functools.cache
def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (its public ``ENGLISH_STOP_WORDS``), imported
    on first use: the import costs about 0.7 s, paid by a job that classes words alone."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def word_class(word: str) -> str:
    """``stopword`` (scikit-learn's English list, any case), ``content`` (other words with
    a letter), or ``other`` (numbers, punctuation, symbols)."""
    if word.lower() in english_stop_words():
        return "stopword"
    return "content" if any(character.isalpha() for character in word) else "other"


@dataclass(frozen=True)
class LayerRows:
    """The occurrences of a shard that have a vector, in occurrence order."""

    vectors: np.ndarray  # (n, d) as stored (float16 or float32)
    sentence_id: np.ndarray
    word_id: np.ndarray
    copies: np.ndarray  # times the corpus repeats each row's sentence
    position: np.ndarray  # the word's position in its sentence (0: the first)
    stored_dtype: str | None = None  # the shard's dtype, where `vectors` were widened from it

    def kept(self, keep: np.ndarray, overwrite: bool) -> LayerRows:
        """The rows of bool mask `keep`; with `overwrite`, moved up in place in `vectors`
        (`rows.keep_rows`) instead of copied."""
        if keep.all():
            return self
        vectors = keep_rows(self.vectors, keep) if overwrite else self.vectors[keep]
        return LayerRows(
            vectors,
            self.sentence_id[keep],
            self.word_id[keep],
            self.copies[keep],
            self.position[keep],
            self.stored_dtype,
        )


def valid_rows(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    sentence_copies: np.ndarray,
    overwrite: bool,
    stored_dtype: str | None = None,
) -> LayerRows:
    """The rows with a vector (`LayerRows.kept`), `stored_dtype` the shard's dtype."""
    sentence_id = occurrences["sentence_id"].to_numpy()
    every = LayerRows(
        vectors=vectors,
        sentence_id=sentence_id,
        word_id=occurrences["word_id"].to_numpy(),
        copies=np.asarray(sentence_copies, dtype=np.int64)[sentence_id],
        position=occurrences["position"].to_numpy(),
        stored_dtype=stored_dtype,
    )
    return every.kept(rows_with_vectors(vectors), overwrite)


def word_rows(vocab: pd.DataFrame, word_ids: np.ndarray) -> pd.DataFrame:
    """The first columns of a per-word table: each word's id, its vocabulary columns
    (word, count, count_with_repeats, n_contexts, frequency_rank) and `word_class`."""
    columns = ["word", "count", "count_with_repeats", "n_contexts", "frequency_rank"]
    words = vocab.set_index("word_id").loc[word_ids, columns].reset_index()
    words["word_class"] = [word_class(word) for word in words["word"]]
    return words


def word_table(rows: LayerRows, vocab: pd.DataFrame, first_components: bool = True) -> pd.DataFrame:
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
        rows.vectors, word_starts, rows.copies, order, stored=rows.stored_dtype
    )
    words["mev"] = statistics.mev
    words["mev_centered"] = statistics.mev_centered
    words["mev_truncated_svd"] = statistics.truncated_svd
    return words[words["n"] >= 2].reset_index(drop=True)


def sentence_table(
    rows: LayerRows, sentence_starts: np.ndarray, intrasim: np.ndarray, cosine: float
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
