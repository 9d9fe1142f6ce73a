"""Occurrence index and vocabulary: which word occurs where, and in how many contexts.

A *context* is a distinct sentence. A word is *indexed* (its SelfSim and MEV are computed)
when it occurs in at least ``min_contexts`` distinct sentences. Embeddings are stored for
every occurrence of every word, indexed or not, because IntraSim needs whole sentences.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from contextuality.words import split_words


@dataclass(frozen=True)
class OccurrenceIndex:
    """The occurrence table and the vocabulary built from one sentence table.

    ``occurrences``: one row per word token, ordered by (sentence_id, position), so its
    ``occurrence_id`` equals the row number and each sentence's words are contiguous.
    Columns ``occurrence_id``, ``sentence_id``, ``position``, ``word_id``, ``word``.

    ``vocab``: one row per distinct word, ``word_id`` = row number, columns ``word``,
    ``count`` (tokens), ``n_contexts`` (distinct sentences), ``frequency_rank`` (1 = most
    frequent; ties broken by first appearance) and ``indexed``.
    """

    occurrences: pd.DataFrame
    vocab: pd.DataFrame


def build_occurrence_index(
    sentences: list[str], min_contexts: int = 5, lowercase: bool = False
) -> OccurrenceIndex:
    """Tokenize `sentences` (position = sentence_id) and count words and their contexts."""
    if min_contexts < 1:
        raise ValueError(f"min_contexts must be at least 1, got {min_contexts}")
    sentence_ids, positions, words = [], [], []
    for sentence_id, sentence in enumerate(sentences):
        tokens = split_words(sentence)
        if lowercase:
            tokens = [token.lower() for token in tokens]
        sentence_ids.extend([sentence_id] * len(tokens))
        positions.extend(range(len(tokens)))
        words.extend(tokens)
    word_codes, vocabulary = pd.factorize(pd.Series(words, dtype=object), sort=False)
    occurrences = pd.DataFrame(
        {
            "occurrence_id": np.arange(len(words), dtype=np.int64),
            "sentence_id": np.asarray(sentence_ids, dtype=np.int32),
            "position": np.asarray(positions, dtype=np.int32),
            "word_id": word_codes.astype(np.int32),
            "word": words,
        }
    )
    count = np.bincount(word_codes, minlength=len(vocabulary))
    distinct_pairs = occurrences[["word_id", "sentence_id"]].drop_duplicates()
    n_contexts = np.bincount(distinct_pairs["word_id"], minlength=len(vocabulary))
    order = np.lexsort((np.arange(len(vocabulary)), -count))
    frequency_rank = np.empty(len(vocabulary), dtype=np.int32)
    frequency_rank[order] = np.arange(1, len(vocabulary) + 1)
    vocab = pd.DataFrame(
        {
            "word_id": np.arange(len(vocabulary), dtype=np.int32),
            "word": list(vocabulary),
            "count": count.astype(np.int64),
            "n_contexts": n_contexts.astype(np.int64),
            "frequency_rank": frequency_rank,
            "indexed": n_contexts >= min_contexts,
        }
    )
    return OccurrenceIndex(occurrences, vocab)


def index_checksum(occurrences: pd.DataFrame) -> str:
    """SHA-256 of the index content (sentence ids, positions, words), independent of file format.

    Embedding shards record it; a shard whose checksum differs from the current index
    does not align with it row for row.
    """
    digest = hashlib.sha256()
    digest.update(occurrences["sentence_id"].to_numpy(dtype=np.int32).tobytes())
    digest.update(occurrences["position"].to_numpy(dtype=np.int32).tobytes())
    digest.update("\n".join(occurrences["word"]).encode())
    return digest.hexdigest()


def corpus_checksum(texts: list[str]) -> str:
    """SHA-256 of the sentence table's texts in order."""
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()
