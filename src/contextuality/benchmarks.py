"""Word-embedding benchmarks of the paper's Table 1: readers, scorers and a registry.

Ethayarajh (2019, Table 1) scores static word embeddings on nine benchmarks with the
word-embeddings-benchmarks package (``web``, Jastrzebski et al. 2017). Two protocols are
offered (`PROTOCOLS`). Both lowercase the benchmark words, give an out-of-vocabulary (OOV)
word a mean vector, and report with every `Score` its coverage: the share of items (pairs,
questions, words) whose words are all in the vocabulary, so that a score over a small
vocabulary is never read as a score over the whole benchmark.

``"standard"`` scores the vectors as given, normalizing each vector where a benchmark
compares directions; the OOV stand-in is the mean of the raw vectors.

- Similarity (SimLex-999, MEN, WordSim-353, Stanford RW): Spearman ρ between the cosine of
  the two words' vectors and the human score.
- Analogy (Google, MSR): accuracy of 3CosAdd, argmax over the vocabulary of
  cos(d, b − a + c), the question words a, b, c excluded from the candidates; 3CosMul
  (Levy & Goldberg 2014) on request. The OOV stand-in is unit-normalized like every vector.
- Relational similarity (SemEval-2012 Task 2): per subcategory, Spearman ρ between the
  model's rating of each pair and the gold rating, averaged over the 69 Testing
  subcategories, which is the official evaluation (the organisers' ``score_scale.pl``). The
  task leaves the rating to the system; ours rates a pair X:Y by the mean cosine of its
  offset Y − X with the offsets of the subcategory's paradigm pairs (those shown to the
  annotators). ``relation="dot"`` gives instead the ``web`` rating, the dot product of
  Y − X with the mean paradigm offset.
- Categorization (BLESS, AP): purity of a KMeans clustering (scikit-learn, seeded,
  ``n_init=10``) of the unit-normalized word vectors into as many clusters as there are
  gold categories. One fixed method, so no choice is made after seeing the result.

``"paper"`` reproduces what the paper's authors ran. Their ``visualize.evaluate()`` kept
only the entries of each embedding file whose lowercased word is in one shared vocabulary
(the lowercased words of the ELMo occurrence index), so that every embedding, GloVe too, is
scored on the same words; ``web``'s ``load_embedding`` then lowercased the words (the first
entry of a lowercase form wins) and scaled every vector to unit norm (`paper_vectors`). The
OOV stand-in is the mean of those unit vectors, not normalized again, so it is shorter than
a word's vector; this changes analogy answers and clusterings wherever a benchmark word is
OOV.

- Similarity: as standard, on the unit vectors and their mean.
- Analogy: argmax over the vocabulary of d · (b − a + c), which ranks candidates as the
  cosine does since they are unit, with the stand-in entering as it is; 3CosMul likewise.
- Relational similarity: the ``web`` rating (``relation="dot"``) averaged over all 79
  subcategories, the 10 Training ones included, as ``evaluate_on_semeval_2012_2`` does.
- Categorization: ``evaluate_categorization(method="all")``: the words in a seeded random
  order, then the best purity over Ward, average- and complete-linkage agglomerative
  clusterings (cosine and Euclidean) and the seeded KMeans.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from contextuality.errors import InputDataError
from contextuality.fetch import fetch_file, packaged_checksums

OovPolicy = Literal["mean", "skip"]
OOV_POLICIES = ("mean", "skip")
ScoringProtocol = Literal["standard", "paper"]
PROTOCOLS = ("standard", "paper")
COSMUL_EPSILON = 1e-3

# SemEval-2012 Task 2: 79 subcategories ("1a" … "10f"); 10 were released for training and the
# other 69 are the test set on which the task was scored.
_SEMEVAL_LETTERS = {1: "abcde", 2: "abcdefghij", 3: "abcdefgh", 4: "abcdefgh", 5: "abcdefghi"}
_SEMEVAL_LETTERS |= {6: "abcdefgh", 7: "abcdefgh", 8: "abcdefgh", 9: "abcdefghi", 10: "abcdef"}
SEMEVAL2012_SUBCATEGORIES = tuple(
    f"{category}{letter}" for category, letters in _SEMEVAL_LETTERS.items() for letter in letters
)
SEMEVAL2012_TRAINING = ("1a", "2c", "2h", "3a", "3c", "4c", "5d", "5i", "7a", "10a")
SEMEVAL2012_TESTING = tuple(s for s in SEMEVAL2012_SUBCATEGORIES if s not in SEMEVAL2012_TRAINING)
SEMEVAL2012_GOLD = "semeval2012/SemEval-2012-Gold-Ratings/{split}/GoldRatings-{subcategory}.txt"


def semeval2012_gold_file(subcategory: str) -> str:
    """Path (under the data root) of a subcategory's gold ratings, in the folder of the split
    that released it."""
    split = "Training" if subcategory in SEMEVAL2012_TRAINING else "Testing"
    return SEMEVAL2012_GOLD.format(split=split, subcategory=subcategory)


SEMEVAL2012_PARADIGMS = "semeval2012/SemEval-2012-Complete-Data-Package/subcategories-paradigms.txt"

# Where each mirrored file was published: data-root prefix → (repository, commit, path prefix
# in the repository). Files are byte-for-byte copies (see the mirror's SOURCES.md).
_ORIGINS = {
    "wordsim/": (
        "mfaruqui/eval-word-vectors",
        "94b3dd9fdbac7ed08dbee7179cd5ee464acf0594",
        "data/word-sim/",
    ),
    "analogy/questions-words.txt": (
        "tmikolov/word2vec",
        "20c129af10659f7c50e86e3be406df663beff438",
        "questions-words.txt",
    ),
    "analogy/msr.csv": (
        "vecto-ai/word-benchmarks",
        "9b61d0e067e2e68af22160d09450f82d9544cd70",
        "word-analogy/monolingual/en/msr.csv",
    ),
    "categorization/": (
        "vecto-ai/word-benchmarks",
        "9b61d0e067e2e68af22160d09450f82d9544cd70",
        "word-categorization/monolingual/en/",
    ),
    "semeval2012/": (
        "SBelkaid/degrees_of_similarities",
        "f15c3c9f82490537318f0d971a8fa3a397655e7d",
        "",
    ),
}
RAW_URL = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"


# --------------------------------------------------------------------------- vectors


@dataclass(frozen=True)
class Score:
    """A benchmark result.

    `value`: the benchmark's metric (Spearman ρ, accuracy or purity, as a fraction).
    `coverage`: share of the benchmark's items (pairs, questions, words) with every word in
    the vocabulary, in [0, 1]. `n`: number of items the value was computed over (all items
    with ``oov="mean"``, the covered ones with ``oov="skip"``).
    """

    value: float
    coverage: float
    n: int


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
        for number, line in _iter_lines(path):
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

    def candidate_rows(self, lowercase: bool = True) -> np.ndarray:
        """Rows that a lookup can return (first entry of each word form), ascending."""
        index = self._lowercase_index if lowercase else self._exact_index
        return np.sort(np.fromiter(index.values(), dtype=np.int64, count=len(index)))

    def indices(self, words: Sequence[str], lowercase: bool = True) -> np.ndarray:
        """Vocabulary row of each word (int64), −1 where the word is out of vocabulary."""
        if lowercase:
            index = self._lowercase_index
            return np.array([index.get(str(w).lower(), -1) for w in words], dtype=np.int64)
        index = self._exact_index
        return np.array([index.get(str(w), -1) for w in words], dtype=np.int64)

    def lookup(
        self, words: Sequence[str], lowercase: bool = True, oov: OovPolicy = "mean"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of `words` (float64) and a boolean mask of the words found.

        ``oov="mean"``: one row per word, the vocabulary mean for an OOV word (the paper's
        protocol). ``oov="skip"``: rows only for the words found, in order.
        """
        _check_oov(oov)
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
    return WordVectors(words, _unit_rows(vectors.matrix[rows]))


# --------------------------------------------------------------------------- readers


def _iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text without the line ending) of a UTF-8 file.

    A missing file or an undecodable line is an InputDataError naming the file and line.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as error:
        raise InputDataError(f"{path}: cannot be read ({error.strerror or error})") from error
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputDataError(
                    f"{path} line {number}: not valid UTF-8 "
                    f"(byte 0x{raw[error.start]:02x} at column {error.start + 1})"
                ) from error
            yield number, text.rstrip("\r\n")


def _float(text: str, path: str | Path, number: int, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputDataError(f"{path} line {number}: {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise InputDataError(f"{path} line {number}: {what} {text!r} is not finite")
    return value


def read_similarity(path: str | Path) -> pd.DataFrame:
    """Word-similarity pairs: one ``word1<TAB>word2<TAB>score`` a line, no header.

    Columns: word1, word2 (as written), score (the human rating, in the benchmark's own
    scale: 0–10 for SimLex-999, WordSim-353 and RW, 0–50 for MEN). Blank lines are ignored.
    """
    rows = []
    for number, line in _iter_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            fields = line.split()
        if len(fields) != 3 or not fields[0].strip() or not fields[1].strip():
            raise InputDataError(
                f"{path} line {number}: expected 3 tab-separated fields "
                f"(word1, word2, score), found {line!r}"
            )
        score = _float(fields[2].strip(), path, number, "score")
        rows.append((fields[0].strip(), fields[1].strip(), score))
    if not rows:
        raise InputDataError(f"{path}: no word pairs")
    return pd.DataFrame(rows, columns=["word1", "word2", "score"])


def read_google_analogies(path: str | Path) -> pd.DataFrame:
    """Google analogy questions (``questions-words.txt``): a : b :: c : d.

    ``: <section>`` lines open a section; each other line is ``a b c d``. Columns: category
    (the section name), a, b, c, d (as written; d is the expected answer).
    """
    rows = []
    category = None
    for number, line in _iter_lines(path):
        if not line.strip():
            continue
        if line.startswith(":"):
            category = line[1:].strip()
            if not category:
                raise InputDataError(f"{path} line {number}: a section header with no name")
            continue
        words = line.split()
        if len(words) != 4:
            raise InputDataError(
                f"{path} line {number}: expected 4 words (a b c d), found {len(words)}"
            )
        if category is None:
            raise InputDataError(f"{path} line {number}: a question before any ': section' line")
        rows.append((category, *words))
    if not rows:
        raise InputDataError(f"{path}: no analogy questions")
    return pd.DataFrame(rows, columns=["category", "a", "b", "c", "d"])


def _read_csv_rows(
    path: str | Path, required: Sequence[str]
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row keyed by column) of a comma-separated file whose header holds
    `required`; a row with the wrong number of fields is an InputDataError."""
    lines = _iter_lines(path)
    header_line = next(lines, None)
    if header_line is None:
        raise InputDataError(f"{path}: empty file (expected a header)")
    header = next(csv.reader([header_line[1]]))
    missing = [name for name in required if name not in header]
    if missing:
        raise InputDataError(f"{path} line 1: header {header} lacks column(s) {missing}")
    for number, line in lines:
        if not line.strip():
            continue
        fields = next(csv.reader([line]))
        if len(fields) != len(header):
            raise InputDataError(
                f"{path} line {number}: {len(fields)} fields, the header has {len(header)}"
            )
        yield number, dict(zip(header, fields, strict=True))


def read_msr_analogies(path: str | Path) -> pd.DataFrame:
    """MSR syntactic analogies, vecto-ai's CSV (header ``,type,word1,word2,word3,target``).

    Columns: category (the POS relation `type`, e.g. ``JJ_JJR``), a, b, c, d (= target).
    """
    rows = []
    required = ("type", "word1", "word2", "word3", "target")
    for number, row in _read_csv_rows(path, required):
        values = [row[name].strip() for name in required]
        if not all(values):
            raise InputDataError(f"{path} line {number}: an empty field in {values}")
        rows.append(tuple(values))
    if not rows:
        raise InputDataError(f"{path}: no analogy questions")
    return pd.DataFrame(rows, columns=["category", "a", "b", "c", "d"])


def read_categorization(path: str | Path) -> pd.DataFrame:
    """Categorization words, vecto-ai's CSV (header ``,category,word``).

    Columns: word, category. Rows whose word is empty are dropped: the vecto-ai files end
    every category with one such row (17 in BLESS, 21 in AP), which names no word.
    """
    rows = []
    for number, row in _read_csv_rows(path, ("category", "word")):
        word, category = row["word"].strip(), row["category"].strip()
        if not word:
            continue
        if not category:
            raise InputDataError(f"{path} line {number}: word {word!r} has no category")
        rows.append((word, category))
    if not rows:
        raise InputDataError(f"{path}: no words")
    return pd.DataFrame(rows, columns=["word", "category"])


_GOLD_LINE = re.compile(r'\s*(?P<score>[-+]?\d+(?:\.\d*)?)\s+"(?P<pair>[^"]*)"\s*')
_GOLD_NAME = re.compile(r"GoldRatings-(?P<subcategory>\d+[a-z])\.txt")
_PARADIGM_PAIR = re.compile(r"([^\s,.:]+)\s*:\s*([^\s,.:]+)")


def _split_pair(pair: str, path: str | Path, number: int) -> tuple[str, str]:
    parts = pair.split(":")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise InputDataError(f"{path} line {number}: {pair!r} is not a word pair X:Y")
    return parts[0].strip(), parts[1].strip()


def read_semeval2012_gold(path: str | Path, subcategory: str | None = None) -> pd.DataFrame:
    """One SemEval-2012 Task 2 gold-ratings file (``GoldRatings-<sub>.txt``).

    ``#`` lines are a header; every other line is ``<score> "X:Y"``, the score being the
    MaxDiff prototypicality rating in −100…100 (% chosen most illustrative − % least).
    Columns: subcategory (from the file name unless given), pair ("X:Y"), x, y, gold.
    """
    if subcategory is None:
        match = _GOLD_NAME.fullmatch(Path(path).name)
        if match is None:
            raise InputDataError(f"{path}: name is not GoldRatings-<subcategory>.txt")
        subcategory = match["subcategory"]
    rows = []
    for number, line in _iter_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        match = _GOLD_LINE.fullmatch(line)
        if match is None:
            raise InputDataError(f'{path} line {number}: expected <score> "X:Y", found {line!r}')
        x, y = _split_pair(match["pair"], path, number)
        rows.append((subcategory, match["pair"], x, y, float(match["score"])))
    if not rows:
        raise InputDataError(f"{path}: no rated pairs")
    return pd.DataFrame(rows, columns=["subcategory", "pair", "x", "y", "gold"])


def read_semeval2012_paradigms(path: str | Path) -> pd.DataFrame:
    """Paradigm pairs of each subcategory (``subcategories-paradigms.txt``).

    Lines are ``<category>, <letter>, <CLASS>, <name>, X:Y, X:Y, …``; the released file
    separates some pairs by ``.`` or a space instead of a comma and once writes ``X: Y``,
    so the pairs are found by pattern. Columns: subcategory (e.g. ``2a``), pair, x, y.
    """
    rows = []
    for number, line in _iter_lines(path):
        if not line.strip():
            continue
        fields = line.split(",", 4)
        pairs = _PARADIGM_PAIR.findall(fields[4]) if len(fields) == 5 else []
        if not pairs or not fields[0].strip().isdigit():
            raise InputDataError(
                f"{path} line {number}: expected '<category>, <letter>, <class>, <name>, X:Y, …'"
            )
        subcategory = f"{int(fields[0])}{fields[1].strip()}"
        rows.extend((subcategory, f"{x}:{y}", x, y) for x, y in pairs)
    if not rows:
        raise InputDataError(f"{path}: no paradigm pairs")
    return pd.DataFrame(rows, columns=["subcategory", "pair", "x", "y"])


def read_semeval2012(
    data_root: str | Path, split: Literal["testing", "training", "all"] = "testing"
) -> pd.DataFrame:
    """SemEval-2012 Task 2 under a data root: rated pairs and paradigms of a split.

    The task was scored on the 69 Testing subcategories (the 10 Training ones were released
    for system development); ``"all"`` gives the 79 in `SEMEVAL2012_SUBCATEGORIES` order, as
    ``web`` scores them. Columns: subcategory, pair, x, y, gold (NaN for paradigms),
    paradigm (True for the subcategory's paradigm pairs, False for the rated pairs).
    """
    splits = {
        "testing": SEMEVAL2012_TESTING,
        "training": SEMEVAL2012_TRAINING,
        "all": SEMEVAL2012_SUBCATEGORIES,
    }
    if split not in splits:
        raise ValueError(f"split must be one of {tuple(splits)}, not {split!r}")
    root = Path(data_root)
    paradigms = read_semeval2012_paradigms(root / SEMEVAL2012_PARADIGMS)
    frames = []
    for subcategory in splits[split]:
        chosen = paradigms[paradigms["subcategory"] == subcategory]
        if chosen.empty:
            raise InputDataError(f"{root / SEMEVAL2012_PARADIGMS}: no paradigms for {subcategory}")
        gold_path = root / semeval2012_gold_file(subcategory)
        frames.append(chosen.assign(gold=np.nan, paradigm=True))
        frames.append(read_semeval2012_gold(gold_path, subcategory).assign(paradigm=False))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- scorers


def _check_oov(oov: str) -> None:
    if oov not in OOV_POLICIES:
        raise ValueError(f"oov must be one of {OOV_POLICIES}, not {oov!r}")


def _check_protocol(protocol: str) -> None:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean norm; a zero row stays zero."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1)


def _spearman(model: np.ndarray, gold: np.ndarray) -> float:
    """Spearman ρ; NaN with fewer than 2 items or a constant side (undefined)."""
    if len(model) < 2 or np.ptp(model) == 0 or np.ptp(gold) == 0:
        return math.nan
    return float(spearmanr(model, gold).statistic)


def score_similarity(
    pairs: pd.DataFrame, vectors: WordVectors, lowercase: bool = True, oov: OovPolicy = "mean"
) -> Score:
    """Spearman ρ between cos(word1, word2) and the human score (columns of `read_similarity`).

    Coverage: share of pairs with both words in the vocabulary. With ``oov="mean"`` an OOV
    word is the mean vector; with ``"skip"`` its pairs are left out.
    """
    _check_oov(oov)
    first, found_first = vectors.lookup(pairs["word1"].tolist(), lowercase)
    second, found_second = vectors.lookup(pairs["word2"].tolist(), lowercase)
    covered = found_first & found_second
    keep = covered if oov == "skip" else np.ones(len(pairs), dtype=bool)
    cosines = np.sum(_unit_rows(first[keep]) * _unit_rows(second[keep]), axis=1)
    value = _spearman(cosines, pairs["score"].to_numpy(dtype=np.float64)[keep])
    return Score(value, float(covered.mean()), int(keep.sum()))


def solve_analogies(
    questions: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = True,
    batch_size: int = 256,
    protocol: ScoringProtocol = "standard",
) -> pd.DataFrame:
    """Answer a : b :: c : ? by 3CosAdd and 3CosMul over the whole vocabulary.

    All vocabulary vectors are unit-normalized. An OOV question word is the mean vector,
    unit-normalized under the standard protocol and left as it is under ``"paper"``
    (`vectors` as from `paper_vectors`, whose mean of unit rows is shorter than a word's).
    3CosAdd: argmax over candidates d' of cos(d', b) − cos(d', a) + cos(d', c), which is
    argmax cos(d', b − a + c). 3CosMul: argmax of s(d', b)·s(d', c) / (s(d', a) + ε) with
    s = (cos + 1)/2 ∈ [0, 1] and ε = 1e-3. Candidates are the vocabulary's word forms
    (`WordVectors.candidate_rows`) except a, b and c. Cosines (for the OOV stand-in: dot
    products) of each batch's distinct question words with the candidates come from one
    matrix product.

    Returns one row per question (same index): covered (all four words in the vocabulary),
    predicted_3cosadd, predicted_3cosmul (vocabulary words), correct_3cosadd,
    correct_3cosmul (an OOV answer d is never correct).
    """
    _check_protocol(protocol)
    rows = {column: vectors.indices(questions[column].tolist(), lowercase) for column in "abcd"}
    candidates = vectors.candidate_rows(lowercase)
    unit = _unit_rows(vectors.matrix.astype(np.float32))
    stand_in = vectors.mean_vector.astype(np.float32)
    if protocol == "standard":
        stand_in = _unit_rows(stand_in)
    # Row n of the extended table is the mean vector, standing in for every OOV word.
    n_words = len(vectors.words)
    extended = np.vstack([unit, stand_in[None, :]])
    candidate_vectors = np.ascontiguousarray(unit[candidates])
    column_of = np.full(n_words + 1, -1, dtype=np.int64)
    column_of[candidates] = np.arange(len(candidates))
    query = {column: np.where(rows[column] >= 0, rows[column], n_words) for column in "abc"}

    predicted = {"3cosadd": [], "3cosmul": []}
    for start in range(0, len(questions), batch_size):
        stop = min(start + batch_size, len(questions))
        batch = {column: query[column][start:stop] for column in "abc"}
        distinct, inverse = np.unique(np.concatenate(list(batch.values())), return_inverse=True)
        cosines = extended[distinct] @ candidate_vectors.T
        size = stop - start
        cos_a, cos_b, cos_c = (cosines[inverse[i * size : (i + 1) * size]] for i in range(3))
        add = cos_b - cos_a + cos_c
        mul = (cos_b + 1) * (cos_c + 1) / (2 * (cos_a + 1 + 2 * COSMUL_EPSILON))
        batch_rows = np.arange(size)
        for column in "abc":
            excluded = column_of[batch[column]]
            valid = excluded >= 0
            add[batch_rows[valid], excluded[valid]] = -np.inf
            mul[batch_rows[valid], excluded[valid]] = -np.inf
        predicted["3cosadd"].append(candidates[np.argmax(add, axis=1)])
        predicted["3cosmul"].append(candidates[np.argmax(mul, axis=1)])

    words = np.asarray(vectors.words, dtype=object)
    result = pd.DataFrame(
        {"covered": np.all([rows[column] >= 0 for column in "abcd"], axis=0)},
        index=questions.index,
    )
    for method, chunks in predicted.items():
        answer = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
        result[f"predicted_{method}"] = words[answer]
        result[f"correct_{method}"] = (answer == rows["d"]) & (rows["d"] >= 0)
    return result


def score_analogy(
    questions: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = True,
    oov: OovPolicy = "mean",
    method: Literal["3cosadd", "3cosmul"] = "3cosadd",
    protocol: ScoringProtocol = "standard",
) -> Score:
    """Analogy accuracy (fraction correct) by `method` under `protocol` (see
    `solve_analogies`).

    Coverage: share of questions with all four words in the vocabulary. With
    ``oov="mean"`` every question counts (one with an OOV answer is wrong); with
    ``"skip"`` only covered questions are asked.
    """
    _check_oov(oov)
    _check_protocol(protocol)
    if method not in ("3cosadd", "3cosmul"):
        raise ValueError(f"method must be '3cosadd' or '3cosmul', not {method!r}")
    covered = np.all(
        [vectors.indices(questions[c].tolist(), lowercase) >= 0 for c in "abcd"], axis=0
    )
    asked = questions[covered] if oov == "skip" else questions
    if asked.empty:
        return Score(math.nan, float(covered.mean()), 0)
    solved = solve_analogies(asked, vectors, lowercase, protocol=protocol)
    return Score(float(solved[f"correct_{method}"].mean()), float(covered.mean()), len(asked))


def score_semeval2012(
    table: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = True,
    oov: OovPolicy = "mean",
    relation: Literal["cosine", "dot"] = "cosine",
) -> Score:
    """SemEval-2012 Task 2: Spearman ρ per subcategory, averaged over subcategories.

    `table` as from `read_semeval2012`. A pair X:Y is rated by its offset o = Y − X:
    ``relation="cosine"``: mean over the subcategory's paradigm pairs p of cos(o, o_p);
    ``"dot"``: o · mean(o_p), the word-embeddings-benchmarks rating. A subcategory whose
    ratings are all equal (e.g. all words OOV) counts ρ = 0, as in that package. With
    ``oov="skip"``, OOV pairs (rated or paradigm) are left out, and so is a subcategory
    left with no paradigm or fewer than 2 rated pairs. Coverage and `n` count rated pairs.
    """
    _check_oov(oov)
    if relation not in ("cosine", "dot"):
        raise ValueError(f"relation must be 'cosine' or 'dot', not {relation!r}")
    correlations = []
    covered_total = asked_total = 0
    for _, group in table.groupby("subcategory", sort=False):
        x, found_x = vectors.lookup(group["x"].tolist(), lowercase)
        y, found_y = vectors.lookup(group["y"].tolist(), lowercase)
        found = found_x & found_y
        is_paradigm = group["paradigm"].to_numpy(dtype=bool)
        covered_total += int(np.sum(found & ~is_paradigm))
        usable = found if oov == "skip" else np.ones(len(group), dtype=bool)
        paradigm, rated = usable & is_paradigm, usable & ~is_paradigm
        if not paradigm.any() or rated.sum() < 2:
            continue
        offsets = y - x
        if relation == "cosine":
            ratings = (_unit_rows(offsets[rated]) @ _unit_rows(offsets[paradigm]).T).mean(axis=1)
        else:
            ratings = offsets[rated] @ offsets[paradigm].mean(axis=0)
        rho = _spearman(ratings, group["gold"].to_numpy(dtype=np.float64)[rated])
        correlations.append(0.0 if math.isnan(rho) else rho)
        asked_total += int(rated.sum())
    n_rated = int((~table["paradigm"].astype(bool)).sum())
    coverage = covered_total / n_rated if n_rated else math.nan
    value = float(np.mean(correlations)) if correlations else math.nan
    return Score(value, coverage, asked_total)


def cluster_purity(gold: Sequence, predicted: Sequence) -> float:
    """Purity: (1/N) Σ over clusters of the size of its most frequent gold category."""
    if len(gold) != len(predicted) or len(gold) == 0:
        raise ValueError("gold and predicted must be non-empty and of equal length")
    table = pd.crosstab(np.asarray(predicted), np.asarray(gold))
    return float(table.to_numpy().max(axis=1).sum() / len(gold))


def score_categorization(
    items: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = True,
    oov: OovPolicy = "mean",
    seed: int = 0,
    protocol: ScoringProtocol = "standard",
) -> Score:
    """Purity of a clustering of the words' vectors into k = number of gold categories.

    `items` as from `read_categorization`. Standard protocol: scikit-learn KMeans with
    ``n_init=10`` and ``random_state=seed`` on the unit-normalized vectors (normalizing
    makes Euclidean k-means follow cosine similarity). ``"paper"``: with the words in a
    seeded random order, the best purity of six clusterings (Ward; average and complete
    linkage under the cosine and the Euclidean metric; that KMeans) of the vectors as given
    (`vectors` as from `paper_vectors`). Coverage: share of words in the vocabulary; with
    ``oov="skip"`` OOV words are left out (k then counts the categories of the words kept).
    """
    from sklearn.cluster import KMeans

    _check_oov(oov)
    _check_protocol(protocol)
    matrix, found = vectors.lookup(items["word"].tolist(), lowercase)
    keep = found if oov == "skip" else np.ones(len(items), dtype=bool)
    gold = items["category"].to_numpy()[keep]
    if len(gold) == 0:
        return Score(math.nan, float(found.mean()), 0)
    clusters = min(len(set(gold)), len(gold))
    if protocol == "paper":
        purity = _best_purity(gold, matrix[keep], clusters, seed)
    else:
        labels = KMeans(n_clusters=clusters, n_init=10, random_state=seed).fit_predict(
            _unit_rows(matrix[keep])
        )
        purity = cluster_purity(gold, labels)
    return Score(purity, float(found.mean()), len(gold))


def _best_purity(gold: np.ndarray, matrix: np.ndarray, clusters: int, seed: int) -> float:
    """``web``'s ``evaluate_categorization(method="all")``: the items in a seeded random
    order, then the best purity over Ward linkage, average and complete linkage under the
    cosine and the Euclidean metric, and seeded KMeans (``n_init=10``)."""
    from sklearn.cluster import AgglomerativeClustering, KMeans

    order = np.random.RandomState(seed).choice(len(gold), len(gold), replace=False)
    clusterings = [AgglomerativeClustering(n_clusters=clusters, linkage="ward")]
    clusterings += [
        AgglomerativeClustering(n_clusters=clusters, metric=metric, linkage=linkage)
        for metric in ("cosine", "euclidean")
        for linkage in ("average", "complete")
    ]
    clusterings.append(KMeans(n_clusters=clusters, n_init=10, random_state=seed))
    return max(
        cluster_purity(gold[order], clustering.fit_predict(matrix[order]))
        for clustering in clusterings
    )


# --------------------------------------------------------------------------- registry

Reader = Callable[[Path], pd.DataFrame]
Scorer = Callable[[pd.DataFrame, WordVectors, bool, OovPolicy], Score]


def source_url(relative_path: str) -> str:
    """Public raw URL of a mirrored benchmark file (its origin repository at a fixed commit)."""
    for prefix, (repository, commit, upstream) in _ORIGINS.items():
        if relative_path == prefix or (prefix.endswith("/") and relative_path.startswith(prefix)):
            path = upstream + relative_path[len(prefix) :] if prefix.endswith("/") else upstream
            return RAW_URL.format(repository=repository, commit=commit, path=path)
    raise KeyError(f"{relative_path}: no known origin")


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark: its files (relative to the data root) and their public URLs, its
    kind (similarity, analogy, relational_similarity, categorization), the metric of
    `Score.value`, a reader taking the data root and a scorer taking the read table, and
    the reader and scorer of the paper protocol (the same where the protocols differ only
    in the vectors). `files` are what either protocol reads."""

    name: str
    title: str
    kind: str
    metric: str
    files: tuple[str, ...]
    urls: tuple[str, ...]
    reader: Reader
    scorer: Scorer
    paper_reader: Reader
    paper_scorer: Scorer

    def for_protocol(self, protocol: ScoringProtocol) -> tuple[Reader, Scorer]:
        """The reader and scorer of `protocol`."""
        _check_protocol(protocol)
        if protocol == "paper":
            return self.paper_reader, self.paper_scorer
        return self.reader, self.scorer


def _spec(
    name: str,
    title: str,
    kind: str,
    metric: str,
    files: Sequence[str],
    reader: Reader,
    scorer: Scorer,
    paper_reader: Reader | None = None,
    paper_scorer: Scorer | None = None,
) -> BenchmarkSpec:
    return BenchmarkSpec(
        name,
        title,
        kind,
        metric,
        tuple(files),
        tuple(map(source_url, files)),
        reader,
        scorer,
        paper_reader or reader,
        paper_scorer or scorer,
    )


def _file_reader(read: Callable[[Path], pd.DataFrame], relative: str) -> Reader:
    return lambda data_root: read(Path(data_root) / relative)


def _similarity(name: str, title: str, relative: str) -> BenchmarkSpec:
    reader = _file_reader(read_similarity, relative)
    return _spec(name, title, "similarity", "spearman", [relative], reader, score_similarity)


def _analogy(
    name: str,
    title: str,
    relative: str,
    read: Callable[[Path], pd.DataFrame],
    method: Literal["3cosadd", "3cosmul"],
) -> BenchmarkSpec:
    scorer = functools.partial(score_analogy, method=method)
    return _spec(
        name,
        title,
        "analogy",
        f"accuracy_{method}",
        [relative],
        _file_reader(read, relative),
        scorer,
        paper_scorer=functools.partial(scorer, protocol="paper"),
    )


def _categorization(name: str, title: str, relative: str) -> BenchmarkSpec:
    return _spec(
        name,
        title,
        "categorization",
        "purity",
        [relative],
        _file_reader(read_categorization, relative),
        score_categorization,
        paper_scorer=functools.partial(score_categorization, protocol="paper"),
    )


_SEMEVAL_FILES = [SEMEVAL2012_PARADIGMS] + list(
    map(semeval2012_gold_file, SEMEVAL2012_SUBCATEGORIES)
)
_GOOGLE = "analogy/questions-words.txt"
_MSR = "analogy/msr.csv"
BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        _similarity("simlex999", "SimLex-999", "wordsim/EN-SIMLEX-999.txt"),
        _similarity("men", "MEN", "wordsim/EN-MEN-TR-3k.txt"),
        _similarity("ws353", "WordSim-353", "wordsim/EN-WS-353-ALL.txt"),
        _similarity("rw", "Stanford Rare Words", "wordsim/EN-RW-STANFORD.txt"),
        _analogy("google", "Google analogies", _GOOGLE, read_google_analogies, "3cosadd"),
        _analogy("msr", "MSR analogies", _MSR, read_msr_analogies, "3cosadd"),
        _analogy(
            "google_3cosmul",
            "Google analogies, 3CosMul",
            _GOOGLE,
            read_google_analogies,
            "3cosmul",
        ),
        _analogy("msr_3cosmul", "MSR analogies, 3CosMul", _MSR, read_msr_analogies, "3cosmul"),
        _spec(
            "semeval2012",
            "SemEval-2012 Task 2",
            "relational_similarity",
            "mean_spearman",
            _SEMEVAL_FILES,
            read_semeval2012,
            score_semeval2012,
            paper_reader=functools.partial(read_semeval2012, split="all"),
            paper_scorer=functools.partial(score_semeval2012, relation="dot"),
        ),
        _categorization("bless", "BLESS", "categorization/bless.csv"),
        _categorization("ap", "AP", "categorization/ap.csv"),
    )
}


def _spec_of(name: str) -> BenchmarkSpec:
    if name not in BENCHMARKS:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def _protocol_vectors(
    vectors: WordVectors, protocol: ScoringProtocol, shared_vocabulary: Iterable[str] | None
) -> WordVectors:
    """`vectors` as `protocol` scores them: as given, or `paper_vectors`."""
    _check_protocol(protocol)
    if protocol == "paper":
        return paper_vectors(vectors, shared_vocabulary)
    if shared_vocabulary is not None:
        raise ValueError("shared_vocabulary belongs to the paper protocol, not the standard one")
    return vectors


def _score(
    spec: BenchmarkSpec,
    vectors: WordVectors,
    data_root: str | Path,
    lowercase: bool,
    oov: OovPolicy,
    protocol: ScoringProtocol,
) -> Score:
    reader, scorer = spec.for_protocol(protocol)
    return scorer(reader(Path(data_root)), vectors, lowercase, oov)


def score_benchmark(
    name: str,
    vectors: WordVectors,
    data_root: str | Path,
    lowercase: bool = True,
    oov: OovPolicy = "mean",
    protocol: ScoringProtocol = "standard",
    shared_vocabulary: Iterable[str] | None = None,
) -> Score:
    """Read benchmark `name` (a key of BENCHMARKS) under `data_root` and score `vectors`
    under `protocol` (one of PROTOCOLS). `shared_vocabulary`: the paper protocol's common
    vocabulary (see `paper_vectors`); None keeps every word."""
    spec = _spec_of(name)
    prepared = _protocol_vectors(vectors, protocol, shared_vocabulary)
    return _score(spec, prepared, data_root, lowercase, oov, protocol)


def score_benchmarks(
    vectors: WordVectors,
    data_root: str | Path,
    names: Sequence[str] | None = None,
    lowercase: bool = True,
    oov: OovPolicy = "mean",
    protocol: ScoringProtocol = "standard",
    shared_vocabulary: Iterable[str] | None = None,
) -> pd.DataFrame:
    """`score_benchmark` for each of `names` (default: all), as rows of
    (benchmark, metric, value, coverage, n); the paper protocol's vectors are prepared once."""
    specs = [_spec_of(name) for name in (BENCHMARKS if names is None else names)]
    prepared = _protocol_vectors(vectors, protocol, shared_vocabulary)
    rows = []
    for spec in specs:
        score = _score(spec, prepared, data_root, lowercase, oov, protocol)
        rows.append((spec.name, spec.metric, score.value, score.coverage, score.n))
    return pd.DataFrame(rows, columns=["benchmark", "metric", "value", "coverage", "n"])


def known_checksums() -> dict[str, str]:
    """SHA-256 of every benchmark file, keyed by its path relative to the data root."""
    return packaged_checksums("benchmarks.sha256")


def fetch_benchmark_file(
    relative_path: str, destination: str | Path, mirror: str | Path | None
) -> None:
    """Copy a benchmark file from a mirror directory (laid out like the data root) or
    download it from its origin, verifying its SHA-256; a mismatch leaves no file."""
    expected = known_checksums().get(relative_path)
    if expected is None:
        raise InputDataError(f"{relative_path}: not a known benchmark file")
    fetch_file(
        destination,
        source_url(relative_path),
        None if mirror is None else Path(mirror) / relative_path,
        "with no network, set a mirror directory laid out like the benchmark data root",
        expected_sha256=expected,
    )
