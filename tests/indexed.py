"""An occurrence index of random sentences over a few words, as the measure tests build
their layers on it (imported by the tests as a local module)."""

from __future__ import annotations

import numpy as np

from contextuality.corpus.index import IndexSettings, OccurrenceIndex, build_occurrence_index
from contextuality.corpus.words import split_words

VOCABULARY = ["the", "of", "and", "bank", "river", "money", "dog", "cat", "run"]


def random_index(
    rng: np.random.Generator, n_sentences: int, lengths: tuple[int, int]
) -> OccurrenceIndex:
    """`n_sentences` sentences of `lengths` words (low inclusive, high exclusive) drawn
    from `VOCABULARY`, indexed with words of five contexts or more."""
    sentences = [
        " ".join(rng.choice(VOCABULARY, size=rng.integers(*lengths))) for _ in range(n_sentences)
    ]
    return build_occurrence_index(
        [split_words(sentence) for sentence in sentences], IndexSettings(min_contexts=5)
    )
