"""Occurrence index and vocabulary: which unit occurs where, and in how many contexts.

A *unit* is a word (by a word tokenizer, `contextuality.corpus.words`) or, for a model indexed by
its own tokens, a subword. A *context* is a distinct sentence. A unit is *indexed* (its
SelfSim and MEV are computed) when it occurs in at least ``min_contexts`` distinct sentences
(the paper's definition), or, with ``count_by="occurrences"``, when it occurs at least that
many times counting repeated sentences (what the paper's code counted). Embeddings are
stored for every occurrence of every unit, indexed or not, because IntraSim needs whole
sentences.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality.configuration.schema import check_bounds, choices, default
from contextuality.corpus.words import is_punctuation
from contextuality.errors import ConfigError, InputDataError
from contextuality.files.provenance import read_json, write_json
from contextuality.files.tables import read_parquet, read_parquet_with_provenance, write_parquet

# What ``min_contexts`` counts (the schema's choices of ``index.count_by``).
COUNT_RULES: tuple[str, ...] = choices("index", "count_by")
# The files of an occurrence index, by the names rules and `IndexFiles` give them.
INDEX_FILE_NAMES = {
    "occurrences": "occurrences.parquet",
    "vocab": "vocab.parquet",
    "summary": "index.json",
}


@dataclass(frozen=True)
class IndexSettings:
    """Settings of the occurrence index (config section ``index``).

    tokenizer: the word tokenizer (ignored by a subword index, whose units are the model's
    tokens). lowercase: index lowercased words (the models still see the original case;
    word units only). exclude_punctuation: never index a unit made only of punctuation.
    count_by: ``contexts`` (distinct sentences) or ``occurrences`` (repeats and repeated
    sentences included) against ``min_contexts``.
    """

    min_contexts: int = default("index", "min_contexts")
    lowercase: bool = default("index", "lowercase")
    tokenizer: str = default("index", "tokenizer")
    exclude_punctuation: bool = default("index", "exclude_punctuation")
    count_by: str = default("index", "count_by")

    def __post_init__(self) -> None:
        check_bounds(("index",), asdict(self))

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class OccurrenceIndex:
    """The occurrence table and the vocabulary built from one sentence table.

    ``occurrences``: one row per unit token, ordered by (sentence_id, position), so its
    ``occurrence_id`` equals the row number and each sentence's units are contiguous.
    Columns ``occurrence_id``, ``sentence_id``, ``position``, ``word_id``, ``word``.

    ``vocab``: one row per distinct unit, ``word_id`` = row number, columns ``word``,
    ``count`` (tokens), ``count_with_repeats`` (tokens, each sentence counted as often as
    the corpus repeats it), ``n_contexts`` (distinct sentences), ``frequency_rank`` (1 =
    most frequent; ties broken by first appearance), ``punctuation`` and ``indexed``.
    """

    occurrences: pd.DataFrame
    vocab: pd.DataFrame


def build_occurrence_index(
    sentence_units: list[list[str]],
    settings: IndexSettings | None = None,
    copies: np.ndarray | None = None,
) -> OccurrenceIndex:
    """Index the units of each sentence (position in the list = sentence_id).

    copies: how many times the corpus repeats each sentence (the sentence table's
    ``n_copies``); default once each.
    """
    settings = settings or IndexSettings()
    copies = np.ones(len(sentence_units), dtype=np.int64) if copies is None else copies
    if len(copies) != len(sentence_units):
        raise ValueError(f"{len(copies)} copy counts for {len(sentence_units)} sentences")
    sizes = np.array([len(units) for units in sentence_units], dtype=np.int64)
    words = [unit for units in sentence_units for unit in units]
    if settings.lowercase:
        words = [word.lower() for word in words]
    sentence_ids = np.repeat(np.arange(len(sentence_units), dtype=np.int32), sizes)
    positions = np.arange(len(words), dtype=np.int32) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    word_codes, vocabulary = pd.factorize(pd.Series(words, dtype=object), sort=False)
    occurrences = pd.DataFrame(
        {
            "occurrence_id": np.arange(len(words), dtype=np.int64),
            "sentence_id": sentence_ids,
            "position": positions.astype(np.int32),
            "word_id": word_codes.astype(np.int32),
            "word": words,
        }
    )
    count = np.bincount(word_codes, minlength=len(vocabulary))
    count_with_repeats = np.bincount(
        word_codes, weights=np.asarray(copies)[sentence_ids], minlength=len(vocabulary)
    ).astype(np.int64)
    distinct_pairs = occurrences[["word_id", "sentence_id"]].drop_duplicates()
    n_contexts = np.bincount(distinct_pairs["word_id"], minlength=len(vocabulary))
    order = np.lexsort((np.arange(len(vocabulary)), -count))
    frequency_rank = np.empty(len(vocabulary), dtype=np.int32)
    frequency_rank[order] = np.arange(1, len(vocabulary) + 1)
    punctuation = np.array([is_punctuation(word) for word in vocabulary], dtype=bool)
    vocab = pd.DataFrame(
        {
            "word_id": np.arange(len(vocabulary), dtype=np.int32),
            "word": list(vocabulary),
            "count": count.astype(np.int64),
            "count_with_repeats": count_with_repeats,
            "n_contexts": n_contexts.astype(np.int64),
            "frequency_rank": frequency_rank,
            "punctuation": punctuation,
        }
    )
    vocab["indexed"] = indexed_units(vocab, settings)
    return OccurrenceIndex(occurrences, vocab)


def _counted(settings: IndexSettings) -> str:
    """The vocabulary column ``min_contexts`` is held against (`IndexSettings.count_by`)."""
    return "n_contexts" if settings.count_by == "contexts" else "count_with_repeats"


def indexed_units(vocab: pd.DataFrame, settings: IndexSettings) -> np.ndarray:
    """Which units of `vocab` the index keeps: counted (`IndexSettings.count_by`) at least
    ``min_contexts`` times, punctuation left out where ``exclude_punctuation`` says."""
    indexed = vocab[_counted(settings)].to_numpy() >= settings.min_contexts
    if settings.exclude_punctuation:
        indexed &= ~vocab["punctuation"].to_numpy()
    return indexed


def check_min_contexts(files: IndexFiles, settings: IndexSettings) -> None:
    """Refuse (ConfigError) a ``min_contexts`` under which no word of the index at hand
    would be measurable (indexed, and in two sentences or more), where that index was built
    with the same other settings: the index step would refuse it only after Snakemake had
    removed the good index. Nothing is said without such an index, and nothing is read
    beyond its summary while the settings are the ones it was built with."""
    if not Path(files.summary).is_file():
        return
    try:
        built = files.read_summary()
        settings_then = IndexSettings(**{key: built.get(key) for key in settings.as_dict()})
    except (InputDataError, ConfigError, TypeError):
        return  # damaged, or another version's: the index step decides
    if (
        settings_then == settings  # the index at hand stands
        or replace(settings_then, min_contexts=settings.min_contexts) != settings
        or built.get("units", {}).get("kind") != "word"
    ):
        return
    try:
        vocab = read_parquet(files.vocab)
    except InputDataError:
        return
    measurable = indexed_units(vocab, settings) & (vocab["n_contexts"].to_numpy() >= 2)
    if len(vocab) and not measurable.any():
        raise ConfigError(
            f"index.min_contexts: {settings.min_contexts}: no word of the corpus reaches it "
            f"(counted by {settings.count_by}, the most any word has is "
            f"{int(vocab[_counted(settings)].max())}), so nothing could be measured; lower it "
            f"({files.summary}, built with {settings_then.min_contexts}, is kept)"
        )


def word_units(settings: IndexSettings) -> dict[str, str]:
    """What the units of a word index are, as its summary records them."""
    return {"kind": "word", "tokenizer": settings.tokenizer}


def subword_units(tokenizer: str, source: str) -> dict[str, str]:
    """What the units of the subword index of `tokenizer` (its key, for the model at
    `source`) are, as its summary records them."""
    return {"kind": "subword", "tokenizer": tokenizer, "source": source}


def index_settings_record(settings: IndexSettings, units: dict[str, str]) -> dict[str, Any]:
    """An index's settings and units, whose hash its summary records as ``config_hash``."""
    return {**settings.as_dict(), "units": units}


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


@dataclass(frozen=True)
class IndexFiles:
    """Where an occurrence index is kept: its occurrences and vocabulary (Parquet, each
    with the summary as provenance) and its summary (``index.json``: settings, units,
    counts and the corpus and index checksums)."""

    occurrences: Path
    vocab: Path
    summary: Path

    @classmethod
    def in_directory(cls, directory: str | os.PathLike) -> IndexFiles:
        """The files of an index written into `directory` (`INDEX_FILE_NAMES`)."""
        directory = Path(directory)
        return cls(*(directory / name for name in INDEX_FILE_NAMES.values()))

    @classmethod
    def of(cls, files: Mapping[str, Any]) -> IndexFiles:
        """From a mapping with the keys of `INDEX_FILE_NAMES` (a Snakemake rule's input)."""
        return cls(*(Path(files[key]) for key in INDEX_FILE_NAMES))

    def read_summary(self) -> dict[str, Any]:
        return read_json(self.summary)

    def read_occurrences(self) -> pd.DataFrame:
        """The occurrence table, refused (InputDataError) unless its content has the index
        checksum the summary records."""
        table = read_parquet(self.occurrences)
        if index_checksum(table) != self.read_summary()["index_checksum"]:
            raise self._mismatch(self.occurrences, "its rows have another index checksum")
        return table

    def read_vocab(self) -> pd.DataFrame:
        """The vocabulary, refused (InputDataError) unless it was written with this summary
        (same settings, corpus and index checksums)."""
        vocab, provenance = read_parquet_with_provenance(self.vocab)
        if provenance != self.read_summary():
            raise self._mismatch(self.vocab, "it was written with another index summary")
        return vocab

    def _mismatch(self, path: Path, why: str) -> InputDataError:
        return InputDataError(
            f"{path} is not part of the index {self.summary} describes ({why}); rebuild the "
            "occurrence index from the sentence table"
        )

    def read_sentences(self, sentences_path: str | os.PathLike) -> pd.DataFrame:
        """The sentence table at `sentences_path`, refused (InputDataError) unless it is
        the one this index was built from (by the corpus checksum its summary records)."""
        table = read_parquet(sentences_path)
        if corpus_checksum(table["text"].tolist()) != self.read_summary()["corpus_checksum"]:
            raise InputDataError(
                f"{sentences_path} is not the sentence table that {self.summary} was built "
                "from; rebuild the occurrence index"
            )
        return table

    def write(self, index: OccurrenceIndex, summary: dict[str, Any]) -> None:
        """Write `index` with `summary` as every file's provenance, the summary last."""
        write_parquet(index.occurrences, self.occurrences, summary)
        write_parquet(index.vocab, self.vocab, summary)
        write_json(self.summary, summary)
