"""The checks every model backend must pass, run on each: a tiny transformers BERT and
GPT-2 (random weights, trained tokenizers) and a tiny ELMo in the published file layout.

A new backend joins the parametrization below and must pass them all: its settings round
through the config, its layers are counted without loading weights, it loads ready to
extract, its encoder reads sentences with character offsets, and an extraction through it
gives one finite, deterministic vector per word and layer, the same whatever the batch.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from contextuality import backends
from contextuality.backends.base import LoadedModel, layer_output
from contextuality.backends.elmo.synthetic import write_random_files
from contextuality.errors import ConfigError
from contextuality.extraction.units import align_to_words
from contextuality.provenance import config_hash
from contextuality.words import word_spans

from extraction import extract_every_layer

SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "Bushfires forced hundreds of residents to leave their homes.",
]
# A setting each backend must refuse, as the other backend's own.
REFUSED = {
    "transformers": {"lstm_states": "carried"},
    "elmo": {"units": "subword"},
}


@pytest.fixture(params=["tiny-bert", "tiny-gpt2", "tiny-elmo"])
def section(request, tiny_bert_dir, tiny_gpt2_dir, tmp_path_factory) -> dict:
    """The config section of one backend's tiny model."""
    if request.param == "tiny-bert":
        return {"source": str(tiny_bert_dir)}
    if request.param == "tiny-gpt2":
        return {"source": str(tiny_gpt2_dir)}
    directory = tmp_path_factory.mktemp("tiny-elmo")
    write_random_files(directory)
    return {"source": str(directory), "loader": "elmo"}


@pytest.fixture
def loaded(section) -> LoadedModel:
    return backends.load_model(backends.model_spec("tiny", section))


def test_settings_round_through_the_config(section):
    spec = backends.model_spec("tiny", section)
    settings = backends.model_settings(spec)
    assert backends.model_spec("tiny", settings) == spec
    assert config_hash(json.loads(json.dumps(settings))) == config_hash(settings)


def test_refuses_the_other_backend_s_settings(section):
    loader = section.get("loader", "transformers")
    with pytest.raises(ConfigError):
        backends.model_spec("tiny", {**section, **REFUSED[loader]})


def test_counts_its_layers_without_loading_weights(section, loaded):
    spec = backends.model_spec("tiny", section)
    assert backends.count_hidden_layers(spec) == loaded.n_layers
    assert backends.model_layers(spec) == tuple(range(loaded.n_layers + 1))
    assert all(path.is_file() for path in backends.model_files(spec))
    assert not backends.reads_corpus_in_order(spec)


def test_loads_ready_to_extract(loaded):
    assert not loaded.model.training
    assert loaded.hidden_size > 0 and loaded.max_length >= 8
    assert loaded.encoder.pad_token_id is None or loaded.encoder.pad_token_id >= 0
    conventions = loaded.layer_conventions()
    assert {"layer_0", "last_layer", "final_norm", "last_layer_setting"} <= set(conventions)
    described = [layer_output(layer, loaded.n_layers, conventions) for layer in range(3)]
    assert len(set(described)) == 3 and all(described)


def test_encoder_gives_tokens_with_character_offsets(loaded):
    spans = word_spans(SENTENCES)
    encodings = loaded.encoder.encode(SENTENCES, spans)
    assert len(encodings) == len(SENTENCES)
    for sentence, encoding, sentence_spans in zip(SENTENCES, encodings, spans, strict=True):
        assert len(encoding.offsets) == len(encoding.content) > 0
        assert all(0 <= start < end <= len(sentence) for start, end in encoding.offsets)
        alignment = align_to_words(encoding.offsets, sentence_spans)
        assert set(alignment.token_unit[alignment.token_unit >= 0]) == set(
            range(len(sentence_spans))
        ), "every word gets a token"


def test_extraction_is_finite_deterministic_and_batch_invariant(loaded, tmp_path):
    n_words = sum(len(spans) for spans in word_spans(SENTENCES))
    report, vectors = extract_every_layer(loaded, SENTENCES, tmp_path / "all")
    assert vectors.shape == (loaded.n_layers + 1, n_words, loaded.hidden_size)
    assert np.isfinite(vectors).all() and report.n_occurrences == n_words
    _, again = extract_every_layer(loaded, SENTENCES, tmp_path / "again")
    np.testing.assert_array_equal(again, vectors)
    one_by_one = dataclasses.replace(loaded, spec=dataclasses.replace(loaded.spec, token_budget=1))
    _, alone = extract_every_layer(one_by_one, SENTENCES, tmp_path / "alone")
    np.testing.assert_allclose(alone, vectors, rtol=2e-3, atol=2e-3)
