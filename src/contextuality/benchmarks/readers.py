"""Readers of the benchmark files: word-similarity pairs, analogy questions, categorization
words and SemEval-2012 Task 2. A malformed line is an InputDataError naming file and line."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from contextuality.errors import InputDataError

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


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
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
    for number, line in iter_lines(path):
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
    for number, line in iter_lines(path):
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
    lines = iter_lines(path)
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
    for number, line in iter_lines(path):
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
    for number, line in iter_lines(path):
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
