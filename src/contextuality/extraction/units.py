"""The units of an extraction: sentences → model inputs, each token marked with its row.

Each sentence is tokenized once, as the model reads it (`backends.base.TextEncoder`: the
running text's subwords, or ELMo's words), and each token is given to the units (shard
rows) it serves: for word units every word whose character span its own span overlaps
(`align_to_words`; a piece spanning two words serves both), for subword units itself. A
sentence longer than the model's window is truncated or read in overlapping windows.
Before a forward pass, the units found are checked against the occurrence index, word by
word (`units_matching_index`), so that row i of every shard is occurrence i of the index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from contextuality.backends.base import (
    LoadedModel,
    RunningTextEncoding,
    Span,
    TextEncoder,
    window_overlap_problem,
)
from contextuality.corpus.words import word_spans
from contextuality.errors import ConfigError, InputDataError


def _no_pairs() -> np.ndarray:
    return np.zeros((0, 2), dtype=np.int64)


@dataclass(frozen=True)
class EncodedSentence:
    """One model input: subword ids (for ELMo, one row of character ids per word) and, per
    token, the word it gives its vector to.

    ``word_index`` is the (first) word's position in its sentence, or -1 for special tokens
    and, in window mode, for subwords whose word takes its vector from another window.
    ``shared``: (n, 2) (token position, word) pairs of the further words that tokens
    spanning several words also give their vector to. ``sentence`` is the position of the
    sentence in the list that was encoded.
    """

    input_ids: np.ndarray
    word_index: np.ndarray
    n_words: int
    truncated: bool
    sentence: int = 0
    shared: np.ndarray = field(default_factory=_no_pairs)


def assign_windows(
    word_ids: list[list[int]], positions: list[list[int]] | None = None
) -> list[list[int]]:
    """For overlapping windows of one sentence, keep each word only in its most central window.

    word_ids: per window, the word of each (subword, word) pair, -1 for none; positions: the
    pairs' subword positions in the window (default 0, 1, …: one pair per subword). A
    word's centrality in a window is the smallest distance of its subwords to the window's
    first or last content subword; ties go to the earlier window.
    """
    scores: dict[int, dict[int, int]] = {}
    for window, ids in enumerate(word_ids):
        places = range(len(ids)) if positions is None else positions[window]
        content = [place for place, word in zip(places, ids, strict=True) if word >= 0]
        for position, word in zip(places, ids, strict=True):
            if word >= 0:
                score = min(position - min(content), max(content) - position)
                per_window = scores.setdefault(word, {})
                per_window[window] = min(score, per_window.get(window, score))
    chosen = {
        word: max(per_window, key=lambda window: (per_window[window], -window))
        for word, per_window in scores.items()
    }
    return [
        [word if word >= 0 and chosen[word] == window else -1 for word in ids]
        for window, ids in enumerate(word_ids)
    ]


@dataclass(frozen=True)
class Alignment:
    """Which units (shard rows of the sentence) each content subword gives its vector to.

    token_unit: (n_subwords,) the subword's first unit, or -1 for one that belongs to none.
    shared: (n, 2) (subword, unit) pairs of the further units of subwords that overlap
    several words (each word a subword overlaps takes it), in subword order.
    outside: subwords that overlap no word (e.g. a piece that is only a space).
    """

    token_unit: np.ndarray
    n_units: int
    shared: np.ndarray = field(default_factory=_no_pairs)
    outside: int = 0

    @property
    def spanning(self) -> int:
        """Subwords that overlap two or more words (and so serve each of them)."""
        return len(np.unique(self.shared[:, 0]))

    @property
    def sharing(self) -> int:
        """Units that pool a subword another unit pools too."""
        spanning = self.shared[:, 0]
        return len(np.unique(np.concatenate([self.token_unit[spanning], self.shared[:, 1]])))


def align_to_words(offsets: list[tuple[int, int]], spans: list[tuple[int, int]]) -> Alignment:
    """Give each subword to every word whose character span it overlaps.

    offsets: the subwords' spans in the sentence, in order; spans: the words' spans, in
    order and disjoint. A subword overlapping several words (a piece such as "00pm" over
    the words "4:00" and "pm") goes to each, so that every word some subword touches has a
    vector; one with an empty span or overlapping none goes to no word.
    """
    if not offsets:
        return Alignment(np.zeros(0, dtype=np.int64), len(spans))
    starts = np.array([start for start, _ in spans], dtype=np.int64)
    ends = np.array([end for _, end in spans], dtype=np.int64)
    subword_start = np.array([start for start, _ in offsets], dtype=np.int64)
    subword_end = np.array([end for _, end in offsets], dtype=np.int64)
    first = np.searchsorted(ends, subword_start, side="right")  # first word ending after it
    last = np.searchsorted(starts, subword_end, side="left") - 1  # last word starting before
    n_overlapped = np.where(subword_end > subword_start, np.maximum(last - first + 1, 0), 0)
    further = np.maximum(n_overlapped - 1, 0)
    shared_subword = np.repeat(np.arange(len(offsets)), further)
    # the k-th further unit of a subword is its first unit + k
    rank = np.arange(len(shared_subword)) - np.repeat(np.cumsum(further) - further, further)
    return Alignment(
        token_unit=np.where(n_overlapped > 0, first, -1),
        n_units=len(spans),
        shared=np.stack([shared_subword, first[shared_subword] + 1 + rank], axis=1),
        outside=int((n_overlapped == 0).sum()),
    )


def window_starts(n_subwords: int, length: int, overlap: int) -> list[int]:
    """First subword of each window of `length` subwords over `n_subwords`, consecutive
    windows sharing `overlap` subwords; the last window ends at the last subword."""
    if n_subwords <= length:
        return [0]
    step = length - overlap
    if step < 1:
        raise ConfigError(
            f"window_overlap: {overlap} leaves no step in a window of {length} content "
            f"subwords (max_length less the special tokens); set it below {length}"
        )
    return [*range(0, n_subwords - length, step), n_subwords - length]


def encode_inputs(
    encoder: TextEncoder,
    encodings: list[RunningTextEncoding],
    alignments: list[Alignment],
    max_length: int,
    add_bos: bool,
    long_sentences: str,
    window_overlap: int | None,
) -> list[EncodedSentence]:
    """Model inputs of the encoded sentences, each subword marked with the unit it serves.

    An input is a sentence's special prefix, its content subwords and its special suffix,
    at most `max_length` tokens (with `add_bos`, the encoder's BOS token first, for
    GPT-2 style models). A longer sentence is truncated (``long_sentences="truncate"``: the
    units whose subwords are all cut get no vector) or split into windows of content that
    overlap by `window_overlap` subwords (``"window"``; default a quarter of the input),
    each unit taking its vector from the window where it is most central.
    """
    if add_bos and encoder.bos_token_id is None:
        raise ConfigError("add_bos is set but the tokenizer has no BOS token")
    bos = [encoder.bos_token_id] if add_bos else []
    inputs = []
    for sentence, (encoding, alignment) in enumerate(zip(encodings, alignments, strict=True)):
        n_subwords = len(encoding.content)
        length = max_length - len(bos) - len(encoding.prefix) - len(encoding.suffix)
        if length < 1:
            raise ConfigError(f"max_length {max_length} leaves no room for content subwords")
        if long_sentences == "window":
            overlap = (max_length - len(bos)) // 4 if window_overlap is None else window_overlap
            starts = window_starts(n_subwords, length, overlap)
        else:
            starts = [0]
        before = len(bos) + len(encoding.prefix)
        windows = _window_units(alignment, starts, length, n_subwords)
        for start, units, shared in windows:
            content = [encoding.content[position] for position in range(start, start + len(units))]
            inputs.append(
                EncodedSentence(
                    input_ids=np.asarray(
                        bos + encoding.prefix + content + encoding.suffix, dtype=np.int64
                    ),
                    word_index=np.asarray(
                        [-1] * before + units + [-1] * len(encoding.suffix), dtype=np.int64
                    ),
                    n_words=alignment.n_units,
                    truncated=len(windows) == 1 and n_subwords > length,
                    sentence=sentence,
                    shared=shared + [before, 0],
                )
            )
    return inputs


def _window_units(
    alignment: Alignment, starts: list[int], length: int, n_subwords: int
) -> list[tuple[int, list[int], np.ndarray]]:
    """Per window of `length` content subwords from each of `starts`: its first subword,
    each subword's (first) unit and the (subword, unit) pairs of its shared subwords
    (positions within the window); with several windows, each unit only in the window
    where it is most central (`assign_windows`)."""
    windows = []
    for start in starts:
        stop = min(start + length, n_subwords)
        inside = (alignment.shared[:, 0] >= start) & (alignment.shared[:, 0] < stop)
        shared = alignment.shared[inside] - [start, 0]
        windows.append((start, alignment.token_unit[start:stop].tolist(), shared))
    if len(windows) == 1:
        return windows
    kept = assign_windows(
        [units + shared[:, 1].tolist() for _, units, shared in windows],
        [[*range(len(units)), *shared[:, 0].tolist()] for _, units, shared in windows],
    )
    return [
        (start, words[: len(units)], shared[np.array(words[len(units) :], dtype=np.int64) >= 0])
        for (start, units, shared), words in zip(windows, kept, strict=True)
    ]


@dataclass(frozen=True)
class SentenceUnits:
    """The units (shard rows) of every sentence and how to encode sentences for the model.

    counts: units per sentence, shape (n_sentences,). encode(start, end): the model inputs
    of sentences [start, end), numbered from 0 within that range. subwords_spanning_words,
    words_sharing_subwords, subwords_outside_words: the alignment's counts over the corpus
    (`Alignment.spanning`, ``sharing``, ``outside``).
    """

    counts: np.ndarray
    encode: Callable[[int, int], list[EncodedSentence]]
    subwords_spanning_words: int = 0
    words_sharing_subwords: int = 0
    subwords_outside_words: int = 0


def _units(
    loaded: LoadedModel, encodings: list[RunningTextEncoding], alignments: list[Alignment]
) -> SentenceUnits:
    """`SentenceUnits` of encoded and aligned sentences, encoded for `loaded`'s settings;
    windows that could not move on are refused here, before any forward pass."""
    spec = loaded.spec
    if spec.long_sentences == "window" and spec.window_overlap is not None and encodings:
        bos = 1 if spec.add_bos else 0
        room = min(
            loaded.max_length - bos - len(encoding.prefix) - len(encoding.suffix)
            for encoding in encodings
        )
        problem = window_overlap_problem(spec, room, loaded.max_length)
        if problem:
            raise ConfigError(problem)
    return SentenceUnits(
        counts=np.array([alignment.n_units for alignment in alignments], dtype=np.int64),
        encode=lambda start, end: encode_inputs(
            loaded.encoder,
            encodings[start:end],
            alignments[start:end],
            loaded.max_length,
            spec.add_bos,
            spec.long_sentences,
            spec.window_overlap,
        ),
        subwords_spanning_words=sum(alignment.spanning for alignment in alignments),
        words_sharing_subwords=sum(alignment.sharing for alignment in alignments),
        subwords_outside_words=sum(alignment.outside for alignment in alignments),
    )


def word_inputs(
    loaded: LoadedModel, sentences: list[str], spans: list[list[Span]]
) -> SentenceUnits:
    """Word units: the model's tokens of each sentence (the running text's subwords; for
    ELMo the words themselves), each given to every word whose character span it overlaps
    (`align_to_words`)."""
    encodings = loaded.encoder.encode(sentences, spans)
    alignments = [
        align_to_words(encoding.offsets, sentence_spans)
        for encoding, sentence_spans in zip(encodings, spans, strict=True)
    ]
    return _units(loaded, encodings, alignments)


def subword_inputs(loaded: LoadedModel, encodings: list[RunningTextEncoding]) -> SentenceUnits:
    """Subword units: each content subword of the running text is a row of its own."""
    alignments = [
        Alignment(np.arange(len(encoding.content)), len(encoding.content)) for encoding in encodings
    ]
    return _units(loaded, encodings, alignments)


def sentence_units(
    loaded: LoadedModel, sentences: list[str], spans: list[list[Span]] | None = None
) -> SentenceUnits:
    """The units of `sentences` for the model's ``units`` setting: the words at `spans`
    (default: the ``regex`` word tokenizer's) or the subwords of the running text."""
    if loaded.spec.units == "subword":
        return subword_inputs(loaded, loaded.encoder.encode(sentences))
    return word_inputs(loaded, sentences, spans if spans is not None else word_spans(sentences))


def units_of_part(units: SentenceUnits, counts: np.ndarray, first_sentence: int) -> SentenceUnits:
    """The units of one part's sentences (`units`, built from sentences `first_sentence`
    onward) presented as the whole corpus's: `counts`, the units of every sentence (from
    the occurrence index), and ``encode`` taking the corpus's sentence numbers, of which
    only the part's may be asked for. A part's job so tokenizes its own sentences alone."""

    def encode(start: int, end: int) -> list[EncodedSentence]:
        if start < first_sentence or end - first_sentence > len(units.counts):
            raise ValueError(f"sentences {start}..{end} are outside this part's units")
        return units.encode(start - first_sentence, end - first_sentence)

    counts = np.asarray(counts, dtype=np.int64)
    mine = counts[first_sentence : first_sentence + len(units.counts)]
    if not np.array_equal(mine, units.counts):
        raise ValueError("the part's units disagree with the counts of its sentences")
    return replace(units, counts=counts, encode=encode)


def units_matching_index(
    loaded: LoadedModel,
    sentences: list[str],
    occurrences: pd.DataFrame,
    index_summary: dict[str, Any],
    index_name: str,
    sentence_range: tuple[int, int] | None = None,
) -> SentenceUnits:
    """The model's units of every sentence, checked unit by unit against the occurrence index
    (a word index for word units, this tokenizer's subword index for subword units), so
    that shard row i is occurrence i; InputDataError (naming `index_name`) where they differ.

    sentence_range: [first, end) of one part of a partitioned extraction: only those
    sentences are tokenized and checked, and the units of the others are counted from the
    index, which their own parts check (`units_of_part`).
    """
    described = index_summary.get("units", {})
    expected_kind = "subword" if loaded.spec.units == "subword" else "word"
    if described.get("kind") != expected_kind:
        raise InputDataError(
            f"model {loaded.spec.name} has {expected_kind} units but {index_name} indexes "
            f"{described.get('kind', 'unknown')} units"
        )
    first, end = (0, len(sentences)) if sentence_range is None else sentence_range
    chosen = sentences[first:end]
    if expected_kind == "subword":
        encodings = loaded.encoder.encode(chosen)
        found = loaded.encoder.subword_strings(encodings)
        units = subword_inputs(loaded, encodings)
    else:
        spans = word_spans(chosen, described["tokenizer"])
        found = [
            [sentence[start:stop] for start, stop in sentence_spans]
            for sentence, sentence_spans in zip(chosen, spans, strict=True)
        ]
        units = word_inputs(loaded, chosen, spans)
        if index_summary["lowercase"]:
            found = [[word.lower() for word in words] for words in found]
    indexed = occurrences.groupby("sentence_id", sort=True)["word"].agg(list)
    for sentence_id, words in enumerate(found, start=first):
        if words != indexed.get(sentence_id, []):
            raise InputDataError(
                f"sentence {sentence_id}: {index_name} indexes {indexed.get(sentence_id, [])} "
                f"but model {loaded.spec.name} finds {words}; rebuild the occurrence index"
            )
    if sentence_range is None:
        return units
    counts = np.bincount(occurrences["sentence_id"].to_numpy(), minlength=len(sentences))
    return units_of_part(units, counts, first)
