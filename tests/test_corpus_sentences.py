"""Tests of contextuality.corpus.sentences: STS archives, plain-text corpora and the sentence table.

The STS tests read the staged public copies of the SemEval STS 2012-2016 English test
archives in ``../shared/data/sts`` beside the checkout (documented in
``../shared/data/SOURCES.md``); they are skipped when that mirror is absent.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import re
import urllib.error
import urllib.request
import warnings
import zipfile
from pathlib import Path

import pytest

from contextuality.corpus.sentences import (
    SourcedSentence,
    build_sentence_table,
    corpus_file_labels,
    fetch_sts_archive,
    known_sts_checksums,
    normalize_sentence,
    read_sts_archive,
    read_text_corpus,
    split_sentences,
    sts_archive_name,
    sts_sentences,
    text_corpus_files,
)
from contextuality.corpus.settings import STS_YEARS, CorpusSettings
from contextuality.errors import InputDataError
from contextuality.files.fetch import resolve_data_path

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
STS_DIR = DATA_DIR / "sts"

# From SOURCES.md, "Sentence counts" and "STS format".
STS_PAIRS = {2012: 3108, 2013: 1500, 2014: 3750, 2015: 8500, 2016: 9183}
STS_SCORED_PAIRS = {2012: 3108, 2013: 1500, 2014: 3750, 2015: 3000, 2016: 1186}
STS_UNIQUE_SENTENCES = {2012: 4964, 2013: 2644, 2014: 6384, 2015: 14024, 2016: 11241}
STS_UNIQUE_ALL = 38393
STS_SENTENCES_ALL = 52082
STS_DATASETS = {
    2012: {"MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"},
    2013: {"FNWN", "OnWN", "headlines"},
    2014: {"OnWN", "deft-forum", "deft-news", "headlines", "images", "tweet-news"},
    2015: {"answers-forums", "answers-students", "belief", "headlines", "images"},
    2016: {"answer-answer", "headlines", "plagiarism", "postediting", "question-question"},
}

needs_sts = pytest.mark.skipif(
    not all((STS_DIR / sts_archive_name(year)).is_file() for year in STS_YEARS),
    reason=f"STS mirror not found at {STS_DIR} (expected ../shared/data/sts beside the checkout)",
)


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    """Write a zip archive at `path` holding `members` (name -> bytes)."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


# --------------------------------------------------------------------------------------
# STS archives: the real mirror
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sts_read():
    """{year: (pairs, checksums)} for the five real archives, read once."""
    if not STS_DIR.is_dir():
        pytest.skip(f"STS mirror not found at {STS_DIR}")
    return {
        year: read_sts_archive(STS_DIR / sts_archive_name(year), year, verify_checksums=True)
        for year in STS_YEARS
    }


@needs_sts
@pytest.mark.parametrize("year", STS_YEARS)
def test_sts_pair_and_sentence_counts_match_sources(sts_read, year):
    pairs, _ = sts_read[year]
    assert len(pairs) == STS_PAIRS[year]
    sentences = list(sts_sentences(pairs))
    assert len(sentences) == 2 * STS_PAIRS[year]
    assert len({sentence.text for sentence in sentences}) == STS_UNIQUE_SENTENCES[year]


@needs_sts
@pytest.mark.parametrize("year", STS_YEARS)
def test_sts_datasets_and_line_numbers(sts_read, year):
    pairs, checksums = sts_read[year]
    assert {pair.dataset for pair in pairs} == STS_DATASETS[year]
    assert {pair.year for pair in pairs} == {year}
    inputs = {f"{year}/{dataset}" for dataset in STS_DATASETS[year]}
    assert set(checksums) == inputs | {f"{key}.gs" for key in inputs}
    # Lines of each dataset are numbered 1..n in file order, and datasets are contiguous.
    seen: list[str] = []
    for pair in pairs:
        if not seen or seen[-1] != pair.dataset:
            assert pair.dataset not in seen, f"dataset {pair.dataset} is not contiguous"
            seen.append(pair.dataset)
            expected_line = 1
        assert pair.line == expected_line
        expected_line += 1
    for pair in pairs:
        assert "\t" not in pair.sentence_a and "\t" not in pair.sentence_b
        assert "\n" not in pair.sentence_a and "\n" not in pair.sentence_b


@needs_sts
def test_sts_totals_over_all_years(sts_read):
    all_sentences = [
        sentence for year in STS_YEARS for sentence in sts_sentences(sts_read[year][0])
    ]
    assert sum(len(pairs) for pairs, _ in sts_read.values()) == sum(STS_PAIRS.values()) == 26041
    assert len(all_sentences) == STS_SENTENCES_ALL
    assert len({sentence.text for sentence in all_sentences}) == STS_UNIQUE_ALL


@needs_sts
@pytest.mark.parametrize("year", STS_YEARS)
def test_sts_gold_scored_pairs_per_year(sts_read, year):
    """SOURCES.md "pairs with a gold score": 12,544 of 26,041 pairs over the five years."""
    pairs, _ = sts_read[year]
    scored = [pair for pair in pairs if pair.gold is not None]
    assert len(scored) == STS_SCORED_PAIRS[year]
    assert all(0.0 <= pair.gold <= 5.0 for pair in scored)


@needs_sts
def test_sts_gold_scores_align_with_the_gold_files(sts_read):
    """Each pair's score is the number on the same line of its STS*.gs.<dataset>.txt."""
    with zipfile.ZipFile(STS_DIR / sts_archive_name(2015)) as archive:
        (member,) = [name for name in archive.namelist() if name.endswith("STS.gs.belief.txt")]
        lines = archive.read(member).decode().splitlines()
    belief = [pair for pair in sts_read[2015][0] if pair.dataset == "belief"]
    assert len(belief) == len(lines)
    for pair, line in zip(belief, lines, strict=True):
        assert pair.gold == (float(line) if line.strip() else None)


@needs_sts
def test_scored_only_sentence_table_counts(tmp_path):
    from contextuality.files.tables import read_parquet
    from contextuality.steps import sentences

    archives = [STS_DIR / sts_archive_name(year) for year in STS_YEARS]
    settings = CorpusSettings.from_config(
        {
            "source": "sts",
            "name": "sts",
            "sts": {"years": list(STS_YEARS), "verify_checksums": True, "scored_only": True},
        }
    )
    sentences(settings, archives, tmp_path / "sentences.parquet")
    table = read_parquet(tmp_path / "sentences.parquet")
    assert table["n_copies"].sum() == 2 * sum(STS_SCORED_PAIRS.values()) == 25088
    origins = [origin for joined in table["origins"] for origin in joined.split(";")]
    per_year = {year: sum(o.startswith(f"STS{year}/") for o in origins) for year in STS_YEARS}
    assert per_year == {year: 2 * count for year, count in STS_SCORED_PAIRS.items()}


@needs_sts
def test_sts_documented_overlaps_and_repetition(sts_read):
    """SOURCES.md: 238 exact strings shared by 2013 and 2014; 2016 plagiarism 2542/348."""
    texts = {
        year: {sentence.text for sentence in sts_sentences(sts_read[year][0])} for year in STS_YEARS
    }
    assert len(texts[2013] & texts[2014]) == 238
    plagiarism = [pair for pair in sts_read[2016][0] if pair.dataset == "plagiarism"]
    plagiarism_sentences = list(sts_sentences(plagiarism))
    assert len(plagiarism_sentences) == 2542
    assert len({sentence.text for sentence in plagiarism_sentences}) == 348


@needs_sts
def test_sts_checksums_equal_published_and_mirror_listing(sts_read):
    read = {}
    for year in STS_YEARS:
        read.update(sts_read[year][1])
    assert read == known_sts_checksums()
    assert len(read) == 2 * sum(len(datasets) for datasets in STS_DATASETS.values()) == 48
    # An independent source: the mirror's own listing of member checksums (inputs and gold).
    members_file = STS_DIR / "MEMBERS.sha256"
    if members_file.is_file():
        listed = {}
        for row in members_file.read_text().splitlines():
            digest, location = row.split(maxsplit=1)
            archive, member = location.split(":", 1)
            match = re.search(r"STS(?:\d{4})?\.(input|gs)\.(.+)\.txt$", member)
            if match:
                year = int(re.search(r"STS(\d{4})-en-test\.zip", archive)[1])
                listed[f"{year}/{match[2]}" + (".gs" if match[1] == "gs" else "")] = digest
        assert {key: digest for key, digest in listed.items() if key in read} == read
        assert set(listed) - set(read) == {"2012/ALL.gs", "2013/SMT.gs"}  # no input beside them


@needs_sts
def test_sts_encoding_oddities_are_read_unchanged(sts_read):
    """SOURCES.md "Encoding notes": 22 U+0092 in 2015 belief; U+00A0 in 2 sentences."""
    belief = [pair for pair in sts_read[2015][0] if pair.dataset == "belief"]
    assert sum((p.sentence_a + p.sentence_b).count("\x92") for p in belief) == 22
    all_texts = {
        sentence.text for year in STS_YEARS for sentence in sts_sentences(sts_read[year][0])
    }
    nbsp = [text for text in all_texts if "\xa0" in text]
    assert len(nbsp) == 2
    assert all("\xa0" not in normalize_sentence(text) for text in nbsp)


@needs_sts
def test_sentence_table_over_all_sts_years(sts_read):
    stream = [sentence for year in STS_YEARS for sentence in sts_sentences(sts_read[year][0])]
    table = build_sentence_table(stream)
    n = len(table)
    assert 0 < n <= STS_UNIQUE_ALL
    assert list(table.columns) == ["sentence_id", "text", "n_copies", "origin", "origins"]
    assert table["sentence_id"].tolist() == list(range(n))
    assert int(table["n_copies"].sum()) == STS_SENTENCES_ALL
    assert (table["n_copies"] >= 1).all()
    assert table["text"].is_unique
    # Texts are normalized and non-empty.
    assert all(text and normalize_sentence(text) == text for text in table["text"])
    # Every stream sentence is accounted for under exactly its normalized text.
    assert set(table["text"]) == {normalize_sentence(s.text) for s in stream} - {""}

    label = re.compile(r"STS(?P<year>\d{4})/(?P<dataset>[^:;]+):(?P<line>\d+)(?P<side>[ab])")
    position = {sentence.origin: k for k, sentence in enumerate(stream)}
    assert len(position) == STS_SENTENCES_ALL  # labels are unique
    all_labels = []
    previous_first = -1
    for row in table.itertuples(index=False):
        origins = row.origins.split(";")
        assert len(origins) == row.n_copies
        assert origins[0] == row.origin
        for origin in origins:
            match = label.fullmatch(origin)
            assert match, origin
            year = int(match["year"])
            assert match["dataset"] in STS_DATASETS[year]
            assert 1 <= int(match["line"]) <= STS_PAIRS[year]
            assert normalize_sentence(stream[position[origin]].text) == row.text
        # Origins of one sentence in stream order; rows in first-seen order.
        indices = [position[origin] for origin in origins]
        assert indices == sorted(indices)
        assert indices[0] > previous_first
        previous_first = indices[0]
        all_labels.extend(origins)
    assert sorted(all_labels) == sorted(position)
    assert table["origin"].iloc[0] == "STS2012/MSRpar:1a"


# --------------------------------------------------------------------------------------
# STS archives: error paths on constructed zips
# --------------------------------------------------------------------------------------


def test_missing_archive_is_named(tmp_path):
    missing = tmp_path / "STS2012-en-test.zip"
    with pytest.raises(InputDataError, match="not found") as caught:
        read_sts_archive(missing, 2012, verify_checksums=True)
    assert str(missing) in str(caught.value)


def test_file_that_is_not_a_zip(tmp_path):
    bogus = tmp_path / "bogus.zip"
    bogus.write_bytes(b"this is not a zip archive")
    with pytest.raises(InputDataError, match="not a zip") as caught:
        read_sts_archive(bogus, 2012, verify_checksums=True)
    assert str(bogus) in str(caught.value)


def test_zip_without_input_member(tmp_path):
    archive = make_zip(
        tmp_path / "nothing.zip",
        {"test-gold/00-readme.txt": b"readme\n", "test-gold/STS.gs.MSRpar.txt": b"4.0\n"},
    )
    with pytest.raises(InputDataError, match=r"no STS\.input") as caught:
        read_sts_archive(archive, 2012, verify_checksums=False)
    assert str(archive) in str(caught.value)


def test_empty_input_member(tmp_path):
    member = "data/STS.input.mine.txt"
    archive = make_zip(tmp_path / "empty.zip", {member: b""})
    with pytest.raises(InputDataError, match="empty file") as caught:
        read_sts_archive(archive, 2099, verify_checksums=False)
    assert f"{archive}:{member}" in str(caught.value)


def test_non_utf8_line_reports_line_and_byte(tmp_path):
    member = "data/STS.input.mine.txt"
    data = b"one\ttwo\nthree\tfour\nfive \xe9\tsix\n"
    archive = make_zip(tmp_path / "latin1.zip", {member: data})
    with pytest.raises(InputDataError, match="not valid UTF-8") as caught:
        read_sts_archive(archive, 2099, verify_checksums=False)
    message = str(caught.value)
    assert f"{archive}:{member}" in message
    assert "line 3" in message
    assert "0xe9" in message
    assert "column 6" in message


def test_line_without_tab(tmp_path):
    member = "data/STS.input.mine.txt"
    archive = make_zip(tmp_path / "notab.zip", {member: b"a\tb\nc d\ne\tf\n"})
    with pytest.raises(InputDataError, match="no tab") as caught:
        read_sts_archive(archive, 2099, verify_checksums=False)
    message = str(caught.value)
    assert f"{archive}:{member}" in message
    assert "line 2" in message


def test_small_archive_is_parsed(tmp_path):
    """Extra fields (as in 2016) are ignored; CRLF endings and a missing last newline work;
    gold scores come from the dataset's gold file, empty lines and absent files give None."""
    archive = make_zip(
        tmp_path / "small.zip",
        {
            "dir/STS2016.input.zeta.txt": b"z1\tz2\tsrcA\tsrcB\r\n",
            "dir/STS.input.alpha.txt": b'"Quoted\tplain\nsecond a\tsecond b',
            "dir/STS.gs.alpha.txt": b"4.25\n\n",
            "dir/STS.input.alpha.LICENSE": b"licence\n",
        },
    )
    pairs, checksums = read_sts_archive(archive, 2099, verify_checksums=False)
    assert [(p.dataset, p.line, p.sentence_a, p.sentence_b, p.gold) for p in pairs] == [
        ("alpha", 1, '"Quoted', "plain", 4.25),
        ("alpha", 2, "second a", "second b", None),
        ("zeta", 1, "z1", "z2", None),
    ]
    assert checksums == {
        "2099/alpha": hashlib.sha256(b'"Quoted\tplain\nsecond a\tsecond b').hexdigest(),
        "2099/alpha.gs": hashlib.sha256(b"4.25\n\n").hexdigest(),
        "2099/zeta": hashlib.sha256(b"z1\tz2\tsrcA\tsrcB\r\n").hexdigest(),
    }
    labels = [s.origin for s in sts_sentences(pairs)]
    assert labels == [
        "STS2099/alpha:1a",
        "STS2099/alpha:1b",
        "STS2099/alpha:2a",
        "STS2099/alpha:2b",
        "STS2099/zeta:1a",
        "STS2099/zeta:1b",
    ]


def test_checksum_mismatch_is_refused_unless_disabled(tmp_path):
    member = "test-gold/STS.input.MSRpar.txt"
    data = b"A tampered sentence.\tAnother one.\n"
    archive = make_zip(tmp_path / "STS2012-en-test.zip", {member: data})
    digest = hashlib.sha256(data).hexdigest()
    assert known_sts_checksums()["2012/MSRpar"] != digest
    with pytest.raises(InputDataError, match="checksum") as caught:
        read_sts_archive(archive, 2012, verify_checksums=True)
    message = str(caught.value)
    assert f"{archive}:{member}" in message
    assert digest in message
    assert known_sts_checksums()["2012/MSRpar"] in message

    pairs, checksums = read_sts_archive(archive, 2012, verify_checksums=False)
    assert checksums == {"2012/MSRpar": digest}
    assert [(p.year, p.dataset, p.line, p.sentence_a, p.sentence_b) for p in pairs] == [
        (2012, "MSRpar", 1, "A tampered sentence.", "Another one.")
    ]


@pytest.mark.parametrize(
    ("gold", "message"),
    [(b"5\n", "1 gold lines for 2 sentence pairs"), (b"5\nfive\n", "line 2: gold score 'five'")],
)
def test_gold_file_that_does_not_fit_its_input(tmp_path, gold, message):
    archive = make_zip(
        tmp_path / "gold.zip",
        {"STS.input.alpha.txt": b"a\tb\nc\td\n", "STS.gs.alpha.txt": gold},
    )
    with pytest.raises(InputDataError, match=message) as caught:
        read_sts_archive(archive, 2099, verify_checksums=False)
    assert "STS.gs.alpha.txt" in str(caught.value)


@needs_sts
def test_tampered_gold_file_is_refused(tmp_path):
    with zipfile.ZipFile(STS_DIR / sts_archive_name(2015)) as source:
        (member,) = [name for name in source.namelist() if name.endswith("STS.input.belief.txt")]
        data = source.read(member)
    n_lines = data.count(b"\n")
    archive = make_zip(
        tmp_path / "STS2015-en-test.zip",
        {member: data, "STS.gs.belief.txt": b"5\n" * n_lines},
    )
    with pytest.raises(InputDataError, match="STS.gs.belief.txt: checksum"):
        read_sts_archive(archive, 2015, verify_checksums=True)
    pairs, checksums = read_sts_archive(archive, 2015, verify_checksums=False)
    assert {pair.gold for pair in pairs} == {5.0} and "2015/belief.gs" in checksums


def test_known_checksums_cover_all_documented_datasets():
    known = known_sts_checksums()
    inputs = {f"{year}/{dataset}" for year, names in STS_DATASETS.items() for dataset in names}
    assert set(known) == inputs | {f"{key}.gs" for key in inputs}
    assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in known.values())


# --------------------------------------------------------------------------------------
# Fetching archives
# --------------------------------------------------------------------------------------


@needs_sts
def test_fetch_from_mirror_copies_byte_identical(tmp_path):
    destination = tmp_path / "raw" / "nested" / sts_archive_name(2013)
    fetch_sts_archive(2013, destination, STS_DIR)
    assert destination.read_bytes() == (STS_DIR / sts_archive_name(2013)).read_bytes()
    assert sorted(p.name for p in destination.parent.iterdir()) == [destination.name]


def test_fetch_from_constructed_mirror_overwrites(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    payload = bytes(range(256)) * 10
    (mirror / sts_archive_name(2015)).write_bytes(payload)
    destination = tmp_path / "out" / "archive.zip"
    destination.parent.mkdir()
    destination.write_bytes(b"stale")
    fetch_sts_archive(2015, destination, mirror)
    assert destination.read_bytes() == payload
    assert [p.name for p in destination.parent.iterdir()] == ["archive.zip"]


def test_fetch_from_mirror_lacking_the_file(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / sts_archive_name(2012)).write_bytes(b"other year")
    destination = tmp_path / "out" / "STS2014-en-test.zip"
    with pytest.raises(InputDataError, match="not found") as caught:
        fetch_sts_archive(2014, destination, mirror)
    assert str(mirror / "STS2014-en-test.zip") in str(caught.value)
    assert not destination.exists()


def test_fetch_without_network_explains_mirror(tmp_path, monkeypatch):
    """No network is touched: urlopen is replaced by one that fails like an offline host."""

    def offline(url, timeout=None):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    destination = tmp_path / "STS2012-en-test.zip"
    with pytest.raises(InputDataError, match="mirror") as caught:
        fetch_sts_archive(2012, destination, None)
    assert "STS2012-en-test.zip" in str(caught.value)
    assert not destination.exists()
    assert list(tmp_path.iterdir()) == []


def test_fetch_download_path_writes_and_closes_file(tmp_path, monkeypatch):
    """No network is touched: urlopen is replaced by an in-memory response."""
    payload = b"PK fake archive bytes" * 100
    requested = []

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return io.BytesIO(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    destination = tmp_path / "dl" / "STS2016-en-test.zip"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fetch_sts_archive(2016, destination, None)
    assert requested == ["http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip"]
    assert destination.read_bytes() == payload
    assert [p.name for p in destination.parent.iterdir()] == [destination.name]
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


# --------------------------------------------------------------------------------------
# Plain-text corpora
# --------------------------------------------------------------------------------------


def test_read_text_corpus_one_sentence_per_line(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"First sentence.\n\n   \nSecond  one.\r\nThird.")
    sentences = read_text_corpus(path)
    assert sentences == [
        SourcedSentence("First sentence.", "corpus.txt:1"),
        SourcedSentence("Second  one.", "corpus.txt:4"),
        SourcedSentence("Third.", "corpus.txt:5"),
    ]


def test_read_text_corpus_paragraph_mode(tmp_path):
    path = tmp_path / "news.txt"
    path.write_text(
        "Mr. Smith went to Washington. He met the U.S. president! Was it useful?\n"
        "\n"
        "One sentence only\n",
        encoding="utf-8",
    )
    sentences = read_text_corpus(path, one_sentence_per_line=False)
    assert sentences == [
        SourcedSentence("Mr. Smith went to Washington.", "news.txt:1.1"),
        SourcedSentence("He met the U.S. president!", "news.txt:1.2"),
        SourcedSentence("Was it useful?", "news.txt:1.3"),
        SourcedSentence("One sentence only", "news.txt:3.1"),
    ]


@pytest.mark.parametrize("content", [b"", b"\n\n", b"  \n\t\n"])
def test_read_text_corpus_empty(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(InputDataError, match="empty") as caught:
        read_text_corpus(path)
    assert str(path) in str(caught.value)


def test_read_text_corpus_non_utf8(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"fine\nalso fine\n" + "caf\u00e9\n".encode("latin-1"))
    with pytest.raises(InputDataError, match="not valid UTF-8") as caught:
        read_text_corpus(path)
    message = str(caught.value)
    assert str(path) in message
    assert "line 3" in message
    assert "0xe9" in message


def test_read_text_corpus_missing(tmp_path):
    path = tmp_path / "absent.txt"
    with pytest.raises(InputDataError, match="not found") as caught:
        read_text_corpus(path)
    assert str(path) in str(caught.value)


def test_a_directory_of_text_files_is_one_corpus(tmp_path):
    """The matching files, in path order, make the same sentence table as their
    concatenation; origins name each file below the directory, checksums each file."""
    import pandas as pd

    from contextuality import steps

    texts = {
        "b/two.txt": "The dog ran.\nThe cat sat.\n",
        "a.txt": "The cat sat.\n",
        "b/notes.md": "Not part of it.\n",
        "c/d/three.txt": "A bird sang.\n",
    }
    for name, text in texts.items():
        (tmp_path / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "corpus" / name).write_text(text)
    files = text_corpus_files(tmp_path / "corpus", "**/*.txt")
    labels = corpus_file_labels(files)
    assert labels == ["a.txt", "b/two.txt", "c/d/three.txt"]
    (tmp_path / "all.txt").write_text("".join(texts[label] for label in labels))
    settings = {"source": "text", "text": {"split_sentences": False}}
    steps.sentences(CorpusSettings.from_config(settings), files, tmp_path / "many.parquet")
    steps.sentences(
        CorpusSettings.from_config(settings), [tmp_path / "all.txt"], tmp_path / "one.parquet"
    )
    many, one = (pd.read_parquet(tmp_path / f"{name}.parquet") for name in ("many", "one"))
    pd.testing.assert_series_equal(many["text"], one["text"])
    assert read_text_corpus(files[1], label=labels[1])[1].origin == "b/two.txt:2"
    assert text_corpus_files(tmp_path / "corpus", "**/*.md") == [tmp_path / "corpus/b/notes.md"]
    with pytest.raises(InputDataError, match="no corpus file matches '\\*.csv'"):
        text_corpus_files(tmp_path / "corpus", "*.csv")
    with pytest.raises(InputDataError, match="corpus file or directory not found"):
        text_corpus_files(tmp_path / "absent", "**/*.txt")


# --------------------------------------------------------------------------------------
# Sentence splitting and normalization
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Mr. Smith arrived. The meeting began.",
            ["Mr. Smith arrived.", "The meeting began."],
        ),
        (
            "The U.S. Senate voted today. The bill passed.",
            ["The U.S. Senate voted today.", "The bill passed."],
        ),
        (
            "J. R. R. Tolkien wrote it. The end came later.",
            ["J. R. R. Tolkien wrote it.", "The end came later."],
        ),
        (
            "Dr. Jones and Mrs. Brown met on Jan. 5 in St. Louis. They talked.",
            ["Dr. Jones and Mrs. Brown met on Jan. 5 in St. Louis.", "They talked."],
        ),
        ("Is it true? Yes! It is.", ["Is it true?", "Yes!", "It is."]),
        (
            'He said "Stop." Then he left.',
            ['He said "Stop."', "Then he left."],
        ),
        (
            "She asked \u201cWhy?\u201d The room fell silent.",
            ["She asked \u201cWhy?\u201d", "The room fell silent."],
        ),
        (
            "It was over (finally.) Next came 2012. 3 people stayed.",
            ["It was over (finally.)", "Next came 2012.", "3 people stayed."],
        ),
        (
            "It cost 3.5 dollars. e.g. not split here.",
            ["It cost 3.5 dollars. e.g. not split here."],
        ),
        ("  Leading and trailing space.  ", ["Leading and trailing space."]),
        ("No final punctuation", ["No final punctuation"]),
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_split_sentences_loses_no_text():
    text = (
        'Mr. A. B. Jones said "No." The U.S. Army, Inc. agreed! Why? '
        "Because 42. The end... Really. (Yes.) Done"
    )
    pieces = split_sentences(text)
    assert len(pieces) > 1
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")
    assert all(piece == piece.strip() and piece for piece in pieces)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  a   b  ", "a b"),
        ("a\tb\t\tc", "a b c"),
        ("a\u00a0b", "a b"),
        ("a \u00a0 \t b\n", "a b"),
        ("President\u0092s", "Presidents"),
        ("zero\u200bwidth", "zerowidth"),
        ("\ufeffbom", "bom"),
        ("a\x00b\x07c", "abc"),
        ("\u200b \u0092 ", ""),
        ("Jir\u02c7\u00ed caf\u00e9", "Jir\u02c7\u00ed caf\u00e9"),
    ],
)
def test_normalize_sentence(raw, expected):
    assert normalize_sentence(raw) == expected


def test_normalize_sentence_is_idempotent():
    for raw in ["  x\u00a0\u00a0y\u200b z\u0092 ", "plain", "\t\t"]:
        once = normalize_sentence(raw)
        assert normalize_sentence(once) == once


def test_build_sentence_table_constructed():
    sentences = [
        SourcedSentence("The cat sat.", "f:1"),
        SourcedSentence("  The  cat\u00a0sat. ", "f:2"),
        SourcedSentence("\u200b", "f:3"),
        SourcedSentence("A dog.", "f:4"),
        SourcedSentence("The cat sat.", "g:1"),
    ]
    table = build_sentence_table(sentences)
    assert table["sentence_id"].tolist() == [0, 1]
    assert table["text"].tolist() == ["The cat sat.", "A dog."]
    assert table["n_copies"].tolist() == [3, 1]
    assert table["origin"].tolist() == ["f:1", "f:4"]
    assert table["origins"].tolist() == ["f:1;f:2;g:1", "f:4"]


def test_build_sentence_table_rejects_all_empty():
    with pytest.raises(InputDataError, match="no non-empty sentence"):
        build_sentence_table([SourcedSentence("  \u200b ", "f:1")])


# --------------------------------------------------------------------------------------
# package: paths
# --------------------------------------------------------------------------------------


def test_resolve_package_path():
    if importlib.util.find_spec("gensim") is None:
        pytest.skip("gensim is not installed")
    path = resolve_data_path("package:gensim/test/test_data/lee_background.cor")
    assert path.is_file()
    gensim_dir = Path(importlib.util.find_spec("gensim").origin).parent
    assert path.resolve() == (gensim_dir / "test" / "test_data" / "lee_background.cor").resolve()


def test_resolve_missing_package():
    spec = "package:no_such_package_for_contextuality_tests/data.txt"
    with pytest.raises(InputDataError, match="not installed") as caught:
        resolve_data_path(spec)
    assert "no_such_package_for_contextuality_tests" in str(caught.value)


@pytest.mark.parametrize("spec", ["corpus/lee.cor", "/abs/path/file.txt", "packaged:x/y"])
def test_resolve_plain_path_passes_through(spec):
    assert resolve_data_path(spec) == Path(spec)


def test_a_member_the_published_list_does_not_name_is_refused(tmp_path):
    """Checksums on, nothing is read unverified: an unknown dataset (input or gold) stops the
    read with the member's name; checksums off, it is read and its checksum recorded."""
    archive = make_zip(
        tmp_path / "STS2012-en-test.zip",
        {"test-gold/STS.input.newset.txt": b"a\tb\n", "test-gold/STS.gs.newset.txt": b"3\n"},
    )
    with pytest.raises(
        InputDataError, match=r"STS.input.newset.txt: not an STS file .*2012/newset"
    ):
        read_sts_archive(archive, 2012, verify_checksums=True)
    pairs, checksums = read_sts_archive(archive, 2012, verify_checksums=False)
    assert [pair.gold for pair in pairs] == [3.0]
    assert set(checksums) == {"2012/newset", "2012/newset.gs"}
