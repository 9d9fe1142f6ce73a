"""Corpora: the SemEval STS 2012–2016 archives, plain-text files, and the sentence table.

The sentence table is the workflow's single view of a corpus: every sentence once
(whitespace-normalized, de-duplicated), with where it came from.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from contextuality.corpus.settings import CorpusSettings
from contextuality.errors import InputDataError
from contextuality.files.fetch import fetch_file, packaged_checksums
from contextuality.files.provenance import sha256_bytes, sha256_file

log = logging.getLogger(__name__)

STS_URLS = {
    2012: "http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip",
    2013: "http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip",
    2014: "http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip",
    2015: "http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip",
    2016: "http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip",
}
_STS_INPUT_MEMBER = re.compile(r"(?:^|/)STS(?:\d{4})?\.input\.(?P<dataset>.+)\.txt$")
_STS_GOLD_MEMBER = re.compile(r"(?:^|/)STS(?:\d{4})?\.gs\.(?P<dataset>.+)\.txt$")


def sts_archive_name(year: int) -> str:
    """File name of the English test archive of STS `year`, as published upstream."""
    return f"STS{year}-en-test.zip"


@dataclass(frozen=True)
class SentencePair:
    """One line of an STS input file: two sentences, where they were read, and the pair's
    gold similarity score (None where the gold file leaves the line empty or is absent)."""

    year: int
    dataset: str
    line: int
    sentence_a: str
    sentence_b: str
    gold: float | None = None


@dataclass(frozen=True)
class SourcedSentence:
    """A raw sentence and a short label of its origin (e.g. ``STS2012/MSRpar:17a``)."""

    text: str
    origin: str


def known_sts_checksums() -> dict[str, str]:
    """SHA-256 of every STS member as published: input files keyed ``"<year>/<dataset>"``,
    gold-score files ``"<year>/<dataset>.gs"``."""
    return packaged_checksums("sts_inputs.sha256")


def fetch_sts_archive(year: int, destination: str | Path, mirror: str | Path | None) -> None:
    """Copy STS `year`'s archive from a local `mirror` directory, or download it.

    The file appears at `destination` only once complete.
    """
    name = sts_archive_name(year)
    fetch_file(
        destination,
        STS_URLS[year],
        None if mirror is None else Path(mirror) / name,
        f"with no network, set corpus.sts.mirror to a directory holding {name}",
    )


def _decode_lines(data: bytes, where: str) -> list[str]:
    """Decode UTF-8 text line by line so an error names the exact line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    decoded = []
    for number, raw in enumerate(lines, start=1):
        try:
            decoded.append(raw.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as error:
            raise InputDataError(
                f"{where} line {number}: not valid UTF-8 "
                f"(byte 0x{raw[error.start]:02x} at column {error.start + 1})"
            ) from error
    return decoded


def _verified_member(
    archive: zipfile.ZipFile,
    member: str,
    key: str,
    where: str,
    expected: dict[str, str] | None,
    checksums: dict[str, str],
) -> list[str]:
    """A member's decoded lines, after recording its SHA-256 under `key` and checking it
    against the published digest in `expected` (None: checks off). A member the published
    list does not know is refused too: nothing is read unverified."""
    data = archive.read(member)
    checksums[key] = sha256_bytes(data)
    if expected is None:
        return _decode_lines(data, where)
    if key not in expected:
        raise InputDataError(
            f"{where}: not an STS file whose checksum was published ({key}); "
            "set corpus.sts.verify_checksums: false to read it anyway"
        )
    if expected[key] != checksums[key]:
        raise InputDataError(
            f"{where}: checksum {checksums[key]} differs from the published "
            f"{expected[key]}; set corpus.sts.verify_checksums: false to read it anyway"
        )
    return _decode_lines(data, where)


def _gold_scores(lines: list[str], n_pairs: int, where: str) -> list[float | None]:
    """Gold scores aligned with the input lines: a number, or None for an empty line."""
    if len(lines) != n_pairs:
        raise InputDataError(f"{where}: {len(lines)} gold lines for {n_pairs} sentence pairs")
    scores: list[float | None] = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        try:
            scores.append(float(text) if text else None)
        except ValueError:
            raise InputDataError(
                f"{where} line {number}: gold score {text!r} is not a number"
            ) from None
    return scores


def read_sts_archive(
    path: str | Path, year: int, verify_checksums: bool
) -> tuple[list[SentencePair], dict[str, str]]:
    """Read every ``STS*.input.<dataset>.txt`` member of one STS archive, with its gold scores.

    Returns the sentence pairs in archive order, each with its gold score from
    ``STS*.gs.<dataset>.txt`` (None for a pair the gold file leaves empty, or for every pair
    of a dataset that has no gold file), and the SHA-256 of each member read, keyed
    ``"<year>/<dataset>"`` (input) and ``"<year>/<dataset>.gs"`` (gold). With
    `verify_checksums`, a member whose checksum differs from the published one is an error.
    """
    path = Path(path)
    if not path.is_file():
        raise InputDataError(f"{path}: STS archive not found")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as error:
        raise InputDataError(f"{path}: not a zip archive ({error})") from error
    expected = known_sts_checksums() if verify_checksums else None
    pairs: list[SentencePair] = []
    checksums: dict[str, str] = {}
    with archive:
        names = archive.namelist()
        members = sorted(
            (match["dataset"], name) for name in names if (match := _STS_INPUT_MEMBER.search(name))
        )
        gold_members = {
            match["dataset"]: name for name in names if (match := _STS_GOLD_MEMBER.search(name))
        }
        if not members:
            raise InputDataError(f"{path}: holds no STS.input.<dataset>.txt file")
        for dataset, member in members:
            where = f"{path}:{member}"
            key = f"{year}/{dataset}"
            lines = _verified_member(archive, member, key, where, expected, checksums)
            if not lines:
                raise InputDataError(f"{where}: empty file")
            gold: list[float | None] = [None] * len(lines)
            if dataset in gold_members:
                gold_where = f"{path}:{gold_members[dataset]}"
                gold_lines = _verified_member(
                    archive, gold_members[dataset], f"{key}.gs", gold_where, expected, checksums
                )
                gold = _gold_scores(gold_lines, len(lines), gold_where)
            for number, (line, score) in enumerate(zip(lines, gold, strict=True), start=1):
                fields = line.split("\t")
                if len(fields) < 2:
                    raise InputDataError(
                        f"{where} line {number}: expected two tab-separated sentences, found no tab"
                    )
                pairs.append(SentencePair(year, dataset, number, fields[0], fields[1], score))
    return pairs, checksums


def sts_sentences(pairs: Iterable[SentencePair]) -> Iterator[SourcedSentence]:
    """Both sentences of every pair, labelled ``STS<year>/<dataset>:<line><a|b>``."""
    for pair in pairs:
        label = f"STS{pair.year}/{pair.dataset}:{pair.line}"
        yield SourcedSentence(pair.sentence_a, label + "a")
        yield SourcedSentence(pair.sentence_b, label + "b")


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=[\"'“‘(]?[A-Z0-9])")
_NO_BREAK_AFTER = re.compile(
    r"(?:\b[A-Z]|\b(?:Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|Gen|Sen|Rep|Gov|Lt|Col|Sgt|Capt|Inc|Co|Corp|"
    r"Ltd|No|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|vs|etc))\.$"
)


def split_sentences(paragraph: str) -> list[str]:
    """Split running text into sentences at ``.``, ``!`` or ``?`` before a capital or digit.

    A deterministic rule, not a trained splitter: it does not break after single capital
    letters (initials, ``U.S.``) or common abbreviations (``Mr.``, ``Dr.``, ``Jan.``).
    """
    sentences, start = [], 0
    for match in _SENTENCE_BREAK.finditer(paragraph):
        candidate = paragraph[start : match.start()].rstrip()
        if _NO_BREAK_AFTER.search(candidate):
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    sentences.append(paragraph[start:].strip())
    return [sentence for sentence in sentences if sentence]


def text_corpus_files(path: str | Path, pattern: str) -> list[Path]:
    """The files of a text corpus: `path` itself, or the files under the directory `path`
    whose path matches `pattern` (``**`` for any depth), sorted by path."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        siblings = [child.name for child in path.parent.iterdir()] if path.parent.is_dir() else []
        close = difflib.get_close_matches(path.name, siblings, n=1)
        hint = f"; did you mean {path.parent / close[0]}?" if close else ""
        raise InputDataError(
            f"{path}: corpus file or directory not found (looked for {path.absolute()}){hint}"
        )
    files = sorted(match for match in path.glob(pattern) if match.is_file())
    if not files:
        raise InputDataError(f"{path}: no corpus file matches {pattern!r}")
    return files


def corpus_file_labels(paths: list[str | Path]) -> list[str]:
    """How sentences' origins name their files: the file name for a one-file corpus, else
    the path below the files' common directory (unique, readable)."""
    if len(paths) == 1:
        return [Path(paths[0]).name]
    common = Path(os.path.commonpath([Path(path).resolve() for path in paths]))
    return [Path(path).resolve().relative_to(common).as_posix() for path in paths]


def read_text_corpus(
    path: str | Path, one_sentence_per_line: bool = True, label: str | None = None
) -> list[SourcedSentence]:
    """Read a UTF-8 text file: one sentence a line, or paragraphs split into sentences.

    Blank lines are skipped. Origins are ``<label>:<line>`` (``:<line>.<k>`` when split);
    the label defaults to the file's name.
    """
    path = Path(path)
    label = path.name if label is None else label
    if not path.is_file():
        raise InputDataError(f"{path}: corpus file not found")
    lines = _decode_lines(path.read_bytes(), str(path))
    sentences = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if one_sentence_per_line:
            sentences.append(SourcedSentence(line, f"{label}:{number}"))
        else:
            for k, sentence in enumerate(split_sentences(line), start=1):
                sentences.append(SourcedSentence(sentence, f"{label}:{number}.{k}"))
    if not sentences:
        raise InputDataError(f"{path}: empty corpus (no non-blank line)")
    return sentences


def normalize_sentence(text: str) -> str:
    """Drop control and format characters, collapse whitespace runs to one space, strip.

    Control characters (e.g. a stray U+0092) and zero-width format characters are
    invisible to readers and to most subword tokenizers, so they are removed rather than
    left as words of their own.
    """
    visible = "".join(
        " " if character.isspace() else character
        for character in text
        if character.isspace() or unicodedata.category(character) not in ("Cc", "Cf")
    )
    return " ".join(visible.split())


def build_sentence_table(sentences: Iterable[SourcedSentence]) -> pd.DataFrame:
    """De-duplicate normalized sentences, keeping first-seen order and every origin.

    Columns: ``sentence_id`` (0..n-1, first-seen order), ``text``, ``n_copies``,
    ``origin`` (first place seen) and ``origins`` (all places, ``;``-separated).
    Sentences that are empty after normalization are dropped.
    """
    first_seen: dict[str, list[str]] = {}
    for sentence in sentences:
        text = normalize_sentence(sentence.text)
        if text:
            first_seen.setdefault(text, []).append(sentence.origin)
    if not first_seen:
        raise InputDataError("the corpus has no non-empty sentence")
    texts = list(first_seen)
    origins = list(first_seen.values())
    return pd.DataFrame(
        {
            "sentence_id": pd.Series(range(len(texts)), dtype="int32"),
            "text": texts,
            "n_copies": pd.Series([len(o) for o in origins], dtype="int32"),
            "origin": [o[0] for o in origins],
            "origins": [";".join(o) for o in origins],
        }
    )


def read_corpus(
    settings: CorpusSettings, sources: Sequence[str | Path]
) -> tuple[list[SourcedSentence], dict[str, str]]:
    """Every sentence of the configured corpus, in order, and the SHA-256 of each input
    read (by STS archive member, or by file label).

    sources: the STS archives in ``settings.sts.years`` order (with ``scored_only``,
    only the pairs with a gold score are kept), or the text files
    (`text_corpus_files`), read in the order given.
    """
    sentences, checksums = [], {}
    if settings.source == "sts":
        sts = settings.sts
        for year, archive in zip(sts.years, sources, strict=True):
            pairs, member_checksums = read_sts_archive(archive, year, sts.verify_checksums)
            if sts.scored_only:
                scored = [pair for pair in pairs if pair.gold is not None]
                log.info("STS %d: %d of %d pairs have a gold score", year, len(scored), len(pairs))
                pairs = scored
            sentences.extend(sts_sentences(pairs))
            checksums.update(member_checksums)
        return sentences, checksums
    one_per_line = not settings.text.split_sentences
    for path, label in zip(sources, corpus_file_labels(sources), strict=True):
        sentences.extend(read_text_corpus(path, one_per_line, label))
        checksums[label] = sha256_file(path)
    return sentences, checksums


@dataclass(frozen=True)
class ScoredPairs:
    """The STS pairs with a gold score as indices into a list of distinct sentences:
    ``sentences`` (normalized, first-seen order), ``left`` and ``right`` (n_pairs,) the two
    sentences of each pair, ``gold`` (n_pairs,) its score, ``dataset`` its
    ``STS<year>/<dataset>``."""

    sentences: list[str]
    left: np.ndarray
    right: np.ndarray
    gold: np.ndarray
    dataset: list[str]


def scored_pairs(pairs: Iterable[SentencePair]) -> ScoredPairs:
    """The pairs of `pairs` that have a gold score (`ScoredPairs`), each sentence
    normalized as the sentence table normalizes it and kept once."""
    position: dict[str, int] = {}
    left, right, gold, dataset = [], [], [], []
    for pair in pairs:
        if pair.gold is None:
            continue
        for text, side in ((pair.sentence_a, left), (pair.sentence_b, right)):
            side.append(position.setdefault(normalize_sentence(text), len(position)))
        gold.append(pair.gold)
        dataset.append(f"STS{pair.year}/{pair.dataset}")
    if not gold:
        raise InputDataError("no STS pair has a gold score")
    return ScoredPairs(list(position), np.array(left), np.array(right), np.array(gold), dataset)
