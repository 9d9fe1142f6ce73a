"""A researcher's arrays as the measures read them: vectors as a float matrix, and each
row's word and sentence as an occurrence index (`corpus.index.build_occurrence_index`),
the one the workflow builds from a corpus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.corpus.index import IndexSettings, build_occurrence_index


def as_matrix(vectors: Any, name: str = "vectors") -> np.ndarray:
    """`vectors` (n, d), a numpy array or a torch tensor on any device, as a numpy float
    array: float16 and float32 kept, float64 kept, any other dtype as float32."""
    if hasattr(vectors, "detach"):  # a torch tensor: no import of torch needed
        vectors = vectors.detach().to("cpu")
        if str(vectors.dtype) == "torch.bfloat16":  # numpy has no bfloat16
            vectors = vectors.float()
        vectors = vectors.numpy()
    matrix = np.asarray(vectors)
    if matrix.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array (rows × dimensions), got {matrix.shape}")
    if matrix.dtype not in (np.float16, np.float32, np.float64):
        matrix = matrix.astype(np.float32)
    return matrix


def per_row(values: Sequence[Any] | np.ndarray, n_rows: int, name: str) -> np.ndarray:
    """One value per row, as a numpy array; refused where the count is not `n_rows`."""
    array = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=object)
    if array.ndim != 1 or len(array) != n_rows:
        raise ValueError(f"{name}: expected one value per row ({n_rows}), got shape {array.shape}")
    return array


def sentence_codes(labels: np.ndarray) -> tuple[np.ndarray, pd.Index]:
    """Each row's sentence_id and the label of each: the labels in sorted order where they
    sort (so that rows given in another order are the same sentences, and sampled
    alike), in order of first appearance where they do not."""
    try:
        return pd.factorize(pd.Series(labels, dtype=object), sort=True)
    except TypeError:  # labels of kinds that do not compare
        return pd.factorize(pd.Series(labels, dtype=object), sort=False)


def row_sentences(
    sentences: Sequence[Any], positions: Sequence[int] | None, n_rows: int
) -> tuple[np.ndarray, pd.Index, np.ndarray]:
    """Each of the `n_rows` rows' sentence_id (`sentence_codes`), each sentence_id's label,
    and each row's position in its sentence (default: a sentence's rows in the order
    given)."""
    codes, unique_labels = sentence_codes(per_row(sentences, n_rows, "sentences"))
    if positions is None:
        position = pd.Series(codes).groupby(codes).cumcount().to_numpy()
    else:
        position = np.asarray(per_row(positions, n_rows, "positions"), dtype=np.int64)
    return codes, unique_labels, position


@dataclass(frozen=True)
class IndexedRows:
    """The occurrence index of the rows given: ``order[i]`` is the row of occurrence i (the
    occurrences ordered by sentence, `sentence_codes`, then by position),
    `occurrences` and `vocab` as `corpus.index.OccurrenceIndex` has them, `copies` the
    times the corpus repeats each sentence (by sentence_id), and `labels` each sentence_id's
    label as given."""

    order: np.ndarray
    occurrences: pd.DataFrame
    vocab: pd.DataFrame
    copies: np.ndarray
    labels: np.ndarray


def index_rows(
    words: Sequence[str],
    sentences: Sequence[Any],
    positions: Sequence[int] | None = None,
    settings: IndexSettings | None = None,
    sentence_copies: Mapping[Any, int] | None = None,
    n_rows: int | None = None,
) -> IndexedRows:
    """The occurrence index of rows whose word is ``words[i]`` in sentence ``sentences[i]``
    (any hashable label) at position ``positions[i]`` (default: the rows of a sentence in
    the order given). A word is indexed (its SelfSim and MEV computed) as the workflow
    decides (`IndexSettings`: at least ``min_contexts`` distinct sentences).
    sentence_copies: times the corpus repeats a sentence, by label (default once each),
    which the paper's estimators count. n_rows: the rows of the vectors (default: the
    words'), which every array must have."""
    words = per_row(words, len(words) if n_rows is None else n_rows, "words")
    codes, unique_labels, position = row_sentences(sentences, positions, len(words))
    order = np.lexsort((position, codes))
    repeated = (np.diff(codes[order]) == 0) & (np.diff(position[order]) == 0)
    if repeated.any():
        row = int(order[1:][repeated][0])
        label = unique_labels[codes[row]]
        raise ValueError(
            f"positions: row {row} repeats position {position[row]} of sentence {label!r}"
        )
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    units = [list(part) for part in np.split(words[order].astype(str), starts[1:])]
    copies = np.ones(len(unique_labels), dtype=np.int64)
    for label, count in (sentence_copies or {}).items():
        where = unique_labels.get_indexer([label])[0]
        if where < 0:
            raise ValueError(f"sentence_copies: no row is in sentence {label!r}")
        copies[where] = count
    index = build_occurrence_index(units, settings or IndexSettings(), copies)
    return IndexedRows(order, index.occurrences, index.vocab, copies, np.asarray(unique_labels))
