"""Word vectors as the benchmarks look them up: the vocabulary, its lowercase forms, the
mean vector for out-of-vocabulary words, and the vectors as the paper's evaluation saw them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from contextuality.benchmarks.readers import iter_lines
from contextuality.errors import InputDataError

if TYPE_CHECKING:
    import pandas as pd

OovPolicy = Literal["mean", "skip"]
OOV_POLICIES = ("mean", "skip")
ScoringProtocol = Literal["standard", "paper"]
PROTOCOLS = ("standard", "paper")


@dataclass(frozen=True, eq=False)
class WordVectors:
    """A vocabulary and its vectors: row i of `matrix` (n×d, float) is the vector of `words[i]`.

    Lookups (`indices`, `lookup`) can lowercase the benchmark words; the vocabulary is then
    matched by its lowercased form, and when several entries share one lowercase form
    (``Paris``, ``paris``) the first in vocabulary order is the one used, also as an analogy
    candidate. Exact duplicates likewise resolve to their first entry.
    """

    words: list[str]
    matrix: np.ndarray

    def __post_init__(self) -> None:
        matrix = self.matrix
        if not isinstance(matrix, np.ndarray) or matrix.ndim != 2:
            raise ValueError("matrix must be a 2-D numpy array (words × dimensions)")
        if not np.issubdtype(matrix.dtype, np.floating):
            raise ValueError(f"matrix must hold floats, not {matrix.dtype}")
        if matrix.shape[0] != len(self.words):
            raise ValueError(f"{len(self.words)} words but {matrix.shape[0]} matrix rows")
        if not self.words:
            raise ValueError("the vocabulary is empty")

    @classmethod
    def from_word2vec_text(cls, path: str | Path, dtype: type = np.float32) -> WordVectors:
        """Read word2vec text format (``n d`` header) or GloVe text format (no header).

        A first line of exactly two integers is taken as the header; otherwise the
        dimension is the number of fields of the first line minus one. A word may contain
        spaces (GloVe 840B has a few): the last d fields of a line are its vector.
        """
        words: list[str] = []
        rows: list[np.ndarray] = []
        expected: int | None = None
        dimension = 0
        for number, line in iter_lines(path):
            if not line.strip():
                continue
            fields = line.rstrip().split(" ")
            if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
                expected, dimension = int(fields[0]), int(fields[1])
                if dimension < 1:
                    raise InputDataError(f"{path} line 1: dimension {dimension} in the header")
                continue
            if dimension == 0:
                dimension = len(fields) - 1
                if dimension < 1:
                    raise InputDataError(f"{path} line {number}: a word with no vector")
            if len(fields) < dimension + 1:
                raise InputDataError(
                    f"{path} line {number}: expected a word and {dimension} values, "
                    f"found {len(fields)} fields"
                )
            try:
                rows.append(np.asarray(fields[-dimension:], dtype=dtype))
            except ValueError as error:
                raise InputDataError(f"{path} line {number}: not a number ({error})") from error
            words.append(" ".join(fields[:-dimension]))
        if not words:
            raise InputDataError(f"{path}: no vectors")
        if expected is not None and expected != len(words):
            raise InputDataError(
                f"{path}: the header announces {expected} vectors, the file holds {len(words)}"
            )
        return cls(words, np.vstack(rows))

    @cached_property
    def mean_vector(self) -> np.ndarray:
        """Mean of all vocabulary vectors (float64): the stand-in for an OOV word."""
        return self.matrix.mean(axis=0, dtype=np.float64)

    @cached_property
    def solved_analogies(self) -> dict[tuple, pd.DataFrame]:
        """The analogy questions solved on these vectors, by question set and settings
        (`scorers.solve_analogies`): a question set's 3CosAdd and 3CosMul benchmarks share
        one solve, each a product of every question word with the whole vocabulary."""
        return {}

    @cached_property
    def _exact_index(self) -> dict[str, int]:
        index: dict[str, int] = {}
        for row, word in enumerate(self.words):
            index.setdefault(word, row)
        return index

    @cached_property
    def _lowercase_index(self) -> dict[str, int]:
        index: dict[str, int] = {}
        for row, word in enumerate(self.words):
            index.setdefault(word.lower(), row)
        return index

    def candidate_rows(self, lowercase: bool) -> np.ndarray:
        """Rows that a lookup can return (first entry of each word form), ascending."""
        index = self._lowercase_index if lowercase else self._exact_index
        return np.sort(np.fromiter(index.values(), dtype=np.int64, count=len(index)))

    def indices(self, words: Sequence[str], lowercase: bool) -> np.ndarray:
        """Vocabulary row of each word (int64), −1 where the word is out of vocabulary."""
        if lowercase:
            index = self._lowercase_index
            return np.array([index.get(str(w).lower(), -1) for w in words], dtype=np.int64)
        index = self._exact_index
        return np.array([index.get(str(w), -1) for w in words], dtype=np.int64)

    def lookup(
        self, words: Sequence[str], lowercase: bool, oov: OovPolicy
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of `words` (float64) and a boolean mask of the words found.

        ``oov="mean"``: one row per word, the vocabulary mean for an OOV word (the paper's
        protocol). ``oov="skip"``: rows only for the words found, in order.
        """
        check_oov(oov)
        rows = self.indices(words, lowercase)
        found = rows >= 0
        if oov == "skip":
            return self.matrix[rows[found]].astype(np.float64), found
        vectors = np.empty((len(rows), self.matrix.shape[1]), dtype=np.float64)
        vectors[found] = self.matrix[rows[found]]
        vectors[~found] = self.mean_vector
        return vectors, found


def paper_vectors(
    vectors: WordVectors, shared_vocabulary: Iterable[str] | None = None
) -> WordVectors:
    """The vectors as the paper's evaluation saw them: lowercase words, unit-norm rows.

    One entry per lowercase form, the first in vocabulary order, its word lowercased (``web``'s
    ``load_embedding(lower=True)``); with `shared_vocabulary`, only the forms that are the
    lowercase form of one of its words (``visualize.evaluate``'s trimming). Each row is scaled
    to unit norm, so `mean_vector` of the result is the paper's OOV stand-in. The words being
    lowercase, a case-sensitive lookup finds only lowercase benchmark words.
    """
    rows = vectors.candidate_rows(lowercase=True)
    words = [vectors.words[row].lower() for row in rows]
    if shared_vocabulary is not None:
        shared = {str(word).lower() for word in shared_vocabulary}
        kept = [position for position, word in enumerate(words) if word in shared]
        if not kept:
            raise InputDataError(
                f"none of the {len(words)} lowercase word forms of the vectors is in the shared "
                f"vocabulary ({len(shared)} words): nothing left to score"
            )
        rows = rows[kept]
        words = [words[position] for position in kept]
    return WordVectors(words, unit_rows(vectors.matrix[rows]))


def check_oov(oov: str) -> None:
    if oov not in OOV_POLICIES:
        raise ValueError(f"oov must be one of {OOV_POLICIES}, not {oov!r}")


def check_protocol(protocol: str) -> None:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean norm; a zero row stays zero."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1)
