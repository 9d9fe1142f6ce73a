"""What an extraction tells the console as it runs (`extraction.progress`): a line between
batches, not between segments, with the sentences and words done, the time taken, the rate
and the time left; the last at 100 %. Lines are counted with the intervals set to 0 (a line
per batch) or on a clock the test moves by hand, never by waiting."""

from __future__ import annotations

import io
import logging
import re
import sys

import numpy as np
import pytest

from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.words import split_words
from contextuality.extraction import progress as progress_module
from contextuality.extraction.partitions import plan_extraction
from contextuality.extraction.run import run_extraction
from contextuality.extraction.units import EncodedSentence, sentence_units
from contextuality.storage.shards import ShardSetWriter

from extraction import with_spec

SENTENCES = [
    "The cat sat on the mat.",
    "Bushfires",
    "A dog ran in the park, and the cat watched the quick brown fox.",
    "Is it true that 1,650 people voted?",
    "Residents left.",
]
# A duration as the console says it (`console.duration`).
DURATION = r"(\d\.\d s|\d+ s|\d+ min \d+ s|\d+ h \d+ min)"
# A line between batches: sentences (percent), words, time taken, rate, time left.
LINE = re.compile(
    r"(?P<what>.+): extraction: (?P<sentences>[\d,]+) of (?P<n_sentences>[\d,]+) sentences "
    r"\((?P<percent>\d+)%\), (?P<words>[\d,]+) of (?P<n_words>[\d,]+) words, "
    rf"(?P<taken>{DURATION}), [\d,.]+ words/s, "
    rf"time left (about {DURATION}|not yet known)"
)
# The last line: the same counts, and the time the extraction took.
LAST = re.compile(
    r"(?P<what>.+): extraction: (?P<sentences>[\d,]+) of (?P<n_sentences>[\d,]+) sentences "
    r"\(100%\), (?P<words>[\d,]+) of (?P<n_words>[\d,]+) words, in "
    rf"{DURATION}, [\d,.]+ words/s"
)


@pytest.fixture(scope="module")
def bert(tiny_bert_dir):
    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


@pytest.fixture
def console(monkeypatch, caplog):
    """The process's own stderr, with stderr a job's log as in a workflow job
    (`errors.on_console`); the console's log records at INFO."""
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    caplog.set_level(logging.INFO, logger="contextuality.jobs.console")
    return terminal


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def _extract(loaded, sentences, tmp_path, part=0, n_parts=1, progress=True):
    """Extract layers 0 and 1 of `sentences` (part `part` of `n_parts`) into shards, told
    on the console with `progress`; returns the report and the plan."""
    units = sentence_units(loaded, sentences)
    plan = plan_extraction(loaded, units.counts, (0, 1), part, n_parts)
    paths = {layer: tmp_path / f"layer{layer}.h5" for layer in plan.layers}
    attributes = {"index_checksum": "i", "dtype": "float16", **plan.part_attributes()}
    sink = ShardSetWriter(paths, plan.n_rows, loaded.hidden_size, "float16", attributes)
    return run_extraction(loaded, units, plan, sink, progress, seed=0), plan


def _told(console, caplog) -> list[str]:
    """The lines told, checked to be the same in the log and on the console."""
    logged = [
        record.getMessage()
        for record in caplog.records
        if record.name == "contextuality.jobs.console"
    ]
    assert console.getvalue().splitlines() == logged
    return logged


@pytest.mark.parametrize(("part", "n_parts"), [(0, 1), (1, 2)])
def test_a_line_per_batch_with_the_intervals_at_zero(
    bert, tmp_path, monkeypatch, console, caplog, part, n_parts
):
    monkeypatch.setattr(progress_module, "INTERVAL", 0.0)
    monkeypatch.setattr(progress_module, "FIRST_INTERVAL", 0.0)
    # One sentence a batch, more batches than segments: lines between a segment's batches.
    loaded = with_spec(bert, token_budget=8, segment_words=12)
    report, plan = _extract(loaded, SENTENCES, tmp_path, part, n_parts)
    mine = SENTENCES[plan.first_sentence : plan.end_sentence]
    n_words = sum(len(split_words(sentence)) for sentence in mine)
    assert report.n_batches == len(mine) > len(plan.segments)

    start, *between, last = _told(console, caplog)
    what = "tiny-bert" + (f" (part {part + 1} of {n_parts})" if n_parts > 1 else "")
    assert start == (
        f"{what}: extracting {n_words} words of {len(mine)} sentences, 2 layers, on cpu"
    )
    assert len(between) == report.n_batches - 1
    counts = []
    for line in between:
        told = LINE.fullmatch(line)
        assert told, line
        assert told["what"] == what
        assert (_count(told["n_sentences"]), _count(told["n_words"])) == (len(mine), n_words)
        sentences, words = _count(told["sentences"]), _count(told["words"])
        assert int(told["percent"]) == 100 * sentences // len(mine) < 100
        counts.append((sentences, words))
    # One sentence a batch: batch k ends the k-th sentence run (longest first, in a segment).
    assert [sentences for sentences, _ in counts] == list(range(1, len(mine)))
    assert all(a[1] < b[1] for a, b in zip(counts, counts[1:], strict=False))
    ended = LAST.fullmatch(last)
    assert ended, last
    assert ended["what"] == what
    assert _count(ended["sentences"]) == _count(ended["n_sentences"]) == len(mine)
    assert _count(ended["words"]) == _count(ended["n_words"]) == n_words


def test_a_windowed_sentence_is_done_once_all_its_windows_ran(
    bert, tmp_path, monkeypatch, console, caplog
):
    monkeypatch.setattr(progress_module, "INTERVAL", 0.0)
    monkeypatch.setattr(progress_module, "FIRST_INTERVAL", 0.0)
    long = "A dog ran in the park, and the cat watched the quick brown fox jump over it."
    short = "Residents left."
    # Windows of 10 tokens, each its own batch.
    loaded = with_spec(
        bert, max_length=10, long_sentences="window", window_overlap=3, token_budget=10
    )
    report, _ = _extract(loaded, [long, short], tmp_path)
    assert report.sentences_windowed == 1 and report.n_batches >= 3

    _, *between, last = _told(console, caplog)
    assert len(between) == report.n_batches - 1
    n_long, n_short = len(split_words(long)), len(split_words(short))
    for line in between:
        told = LINE.fullmatch(line)
        assert told, line
        counts = (_count(told["sentences"]), _count(told["words"]))
        # Not a window's share: nothing, or one whole sentence.
        assert counts in {(0, 0), (1, n_short), (1, n_long)}, line
    assert LAST.fullmatch(last)
    assert f"2 of 2 sentences (100%), {n_long + n_short} of {n_long + n_short} words" in last


def test_without_progress_nothing_is_told(bert, tmp_path, monkeypatch, console, caplog):
    monkeypatch.setattr(progress_module, "INTERVAL", 0.0)
    monkeypatch.setattr(progress_module, "FIRST_INTERVAL", 0.0)
    _extract(with_spec(bert, token_budget=8), SENTENCES, tmp_path, progress=False)
    assert _told(console, caplog) == []


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _input(sentence: int, n_words: int) -> EncodedSentence:
    """An input of `sentence` (its position in the segment) of `n_words` words."""
    ids = np.arange(n_words)
    return EncodedSentence(
        input_ids=ids, word_index=ids, n_words=n_words, truncated=False, sentence=sentence
    )


def test_the_first_line_after_first_interval_then_every_interval(monkeypatch, console, caplog):
    monkeypatch.setattr(progress_module, "FIRST_INTERVAL", 5.0)
    monkeypatch.setattr(progress_module, "INTERVAL", 15.0)
    clock = Clock()
    told = progress_module.ExtractionProgress("m", 4, 100, 3, "cuda:0", clock=clock)
    # Sentences of 10, 20, 30 and 40 words; the last in two windows (inputs 3 and 4).
    told.segment([_input(0, 10), _input(1, 20), _input(2, 30), _input(3, 40), _input(3, 40)])
    for seconds, positions in [(2, [0]), (6, [1]), (10, [2]), (25, [3]), (30, [4])]:
        clock.now = 100.0 + seconds
        told.batch(np.array(positions))
    told.finish()
    assert _told(console, caplog) == [
        "m: extracting 100 words of 4 sentences, 3 layers, on cuda:0",
        # 30 words in 6 s: 5 words/s, 70 left: 14 s.
        "m: extraction: 2 of 4 sentences (50%), 30 of 100 words, 6.0 s, 5.0 words/s, "
        "time left about 14 s",
        # Not at 10 s (4 s after the last line). At 25 s one window of the last sentence
        # ran: 60 words in 25 s, 2.4 words/s, 40 left: 16.7 s.
        "m: extraction: 3 of 4 sentences (75%), 60 of 100 words, 25 s, 2.4 words/s, "
        "time left about 17 s",
        # At 30 s the end, which the last line says.
        "m: extraction: 4 of 4 sentences (100%), 100 of 100 words, in 30 s, 3.3 words/s",
    ]
