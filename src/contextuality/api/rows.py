"""A researcher's rows as the measures read them. Each row's word, sentence and position
as an occurrence index (`corpus.index.build_occurrence_index`), the one the workflow
builds from a corpus, each argument checked at the door (`api.arguments`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.api.arguments import copies_of, labels_of, positions_of, shown, words_of
from contextuality.corpus.index import IndexSettings, build_occurrence_index
from contextuality.errors import ConfigError


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
    given). Both `measure_layer` and `alignment` read the positions so: as given, each
    a whole number counted from 0 at a sentence's first word (`arguments.positions_of`)."""
    codes, unique_labels = sentence_codes(labels_of(sentences, n_rows))
    if positions is None:
        position = pd.Series(codes).groupby(codes).cumcount().to_numpy()
    else:
        position = positions_of(positions, n_rows)
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
    words = words_of(words, len(words) if n_rows is None else n_rows)
    codes, unique_labels, position = row_sentences(sentences, positions, len(words))
    order = np.lexsort((position, codes))
    repeated = (np.diff(codes[order]) == 0) & (np.diff(position[order]) == 0)
    if repeated.any():
        row = int(order[1:][repeated][0])
        label = unique_labels[codes[row]]
        raise ConfigError(
            f"positions: row {row} repeats position {position[row]} of sentence {shown(label)}"
        )
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    units = [list(part) for part in np.split(words[order].astype(str), starts[1:])]
    copies = np.ones(len(unique_labels), dtype=np.int64)
    for label, count in copies_of(sentence_copies).items():
        where = unique_labels.get_indexer([label])[0]
        if where < 0:
            raise ConfigError(f"sentence_copies: no row is in sentence {shown(label)}")
        copies[where] = count
    index = build_occurrence_index(units, settings or IndexSettings(), copies)
    index.occurrences["position"] = position[order].astype(np.int32)  # as given: `row_sentences`
    labels = np.fromiter(unique_labels, dtype=object, count=len(unique_labels))
    return IndexedRows(order, index.occurrences, index.vocab, copies, labels)
