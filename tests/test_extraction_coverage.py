"""Words that get no vector (cut off by the model's window, or overlapped by no token) are
announced as warnings with counts and examples: in the job's log, in meta.json, and on the
console even when a workflow job's stderr is its log file."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from contextuality import backends, steps
from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.index import IndexFiles, IndexSettings
from contextuality.corpus.settings import CorpusSettings
from contextuality.extraction.report import ExtractionReport, coverage_warnings
from contextuality.files.provenance import read_json
from contextuality.jobs.process import run_step

from extraction import extract_every_layer

# With max_length 6 ([CLS] + 4 subwords + [SEP]) the first sentence loses its last 4 words;
# the BERT normalizer removes U+FFFD, so that word has no token.
SENTENCES = ["cat cat cat cat cat sat on mat", "The cat sat.", "A \ufffd dog"]
TRUNCATED = (
    "model bert: no vector for 4 word occurrences in 1 sentence beyond the model's 6-token "
    "limit (e.g. 'cat' (occurrence 4), 'sat' (occurrence 5), 'on' (occurrence 6), 'mat' "
    "(occurrence 7)); set models.bert.long_sentences: window to read long sentences in windows"
)
UNTOKENIZED = (
    "model bert: no vector for 1 word occurrence that no token of the model overlaps "
    "(e.g. '\ufffd' (occurrence 13))"
)


def test_warnings_give_counts_and_the_first_examples():
    words = np.array([f"w{row}" for row in range(30_000)])
    report = ExtractionReport(
        words_truncated=19_514,
        sentences_truncated=1,
        truncated_examples=[486, 487, 488, 489, 490],
        words_without_tokens=2,
        untokenized_examples=[3, 9],
    )
    truncated, _ = coverage_warnings(report, "minilm", 512, words, "word")
    _, untokenized = coverage_warnings(report, "minilm", 512, words, "subword")
    assert truncated == (
        "model minilm: no vector for 19,514 word occurrences in 1 sentence beyond the model's "
        "512-token limit (e.g. 'w486' (occurrence 486), 'w487' (occurrence 487), 'w488' "
        "(occurrence 488), 'w489' (occurrence 489), 'w490' (occurrence 490)); set "
        "models.minilm.long_sentences: window to read long sentences in windows"
    )
    assert untokenized == (
        "model minilm: no vector for 2 subword occurrences that no token of the model overlaps "
        "(e.g. 'w3' (occurrence 3), 'w9' (occurrence 9))"
    )
    assert coverage_warnings(ExtractionReport(), "minilm", 512, words, "word") == []


def test_extraction_records_the_first_words_without_vectors(tiny_bert_dir, tmp_path):
    loaded = load_model(ModelSettings(name="bert", source=str(tiny_bert_dir), max_length=6))
    report, vectors = extract_every_layer(loaded, SENTENCES * 2, tmp_path)
    assert (report.words_truncated, report.words_without_tokens) == (8, 2)
    assert report.truncated_examples == [4, 5, 6, 7, 19]  # the second copy starts at row 15
    assert report.untokenized_examples == [13, 28]
    lost = report.truncated_examples + report.untokenized_examples
    assert np.isnan(vectors[:, lost]).all()


@pytest.fixture
def index(tmp_path) -> IndexFiles:
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(SENTENCES) + "\n")
    corpus = {"source": "text", "name": "t", "text": {"path": str(text), "split_sentences": False}}
    steps.sentences(CorpusSettings.from_config(corpus), [text], tmp_path / "sentences.parquet")
    files = IndexFiles(tmp_path / "occ.parquet", tmp_path / "vocab.parquet", tmp_path / "i.json")
    steps.occurrence_index(tmp_path / "sentences.parquet", IndexSettings(min_contexts=1), files)
    return files


def test_the_extract_job_warns_on_the_console(
    tiny_bert_dir, index, tmp_path, monkeypatch, capfd, caplog
):
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # run_step makes the log file stderr
    outputs = steps.LayerOutputs({0: tmp_path / "layer_0.h5"}, tmp_path / "meta.json")
    settings = {"source": str(tiny_bert_dir), "max_length": 6, "layers": [0]}
    with caplog.at_level(logging.WARNING):
        run_step(
            tmp_path / "extract.log",
            lambda: steps.extract(
                backends.model_settings("bert", settings),
                tmp_path / "sentences.parquet",
                index,
                outputs,
                progress=False,
                seed=0,
            ),
        )
    console = capfd.readouterr().err
    assert f"WARNING: {TRUNCATED}\n" in console and f"WARNING: {UNTOKENIZED}\n" in console
    assert [r.message for r in caplog.records if r.levelno == logging.WARNING] == [
        TRUNCATED,
        UNTOKENIZED,
    ]
    assert read_json(tmp_path / "meta.json")["warnings"] == [TRUNCATED, UNTOKENIZED]
