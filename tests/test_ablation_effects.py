"""What an ablation of massive activations does to the model: the held-out loss under each
condition and the attention on the first token and on the tokens that carry them, on a
tiny random GPT-2 into whose first block a massive activation is planted."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
import torch
from test_extraction_ablation import SENTENCES as ABLATED_SENTENCES

from contextuality.backends import is_decoder, load_language_model
from contextuality.backends.settings import ModelSettings
from contextuality.extraction.ablation_effects import (
    CONDITIONS,
    NOT_RETURNED,
    ablation_effects,
    first_massive_block,
)

SENTENCES = [*ABLATED_SENTENCES, "the storm moved over the river", "she read about the rates"]
PLANTED_DIMENSION, PLANTED_VALUE = 3, 5000.0


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_dir):
    return load_language_model(ModelSettings(name="tiny-gpt2", source=str(tiny_gpt2_dir)))


@contextlib.contextmanager
def planted(loaded):
    """Block 1's output carries one massive activation: dimension 3 of each sequence's
    first token set to 5,000 (far above 100 and 1,000 times the median)."""

    def plant(module, inputs, output):
        hidden = output[0] if isinstance(output, tuple) else output
        hidden[:, 0, PLANTED_DIMENSION] = PLANTED_VALUE

    handle = loaded.model.transformer.h[0].register_forward_hook(plant)
    try:
        yield
    finally:
        handle.remove()


def _effects(loaded, block, calibration=3):
    return ablation_effects(loaded, SENTENCES, block, calibration, 50, np.random.default_rng(0))


def _brute_force_loss(loaded, sentences):
    """Mean next-token cross-entropy over all predicted tokens, from transformers' own
    loss of each sentence run alone."""
    total, tokens = 0.0, 0
    for sentence in sentences:
        ids = loaded.tokenizer(sentence, return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            loss = loaded.model(input_ids=ids, labels=ids).loss.item()
        total += loss * (ids.shape[1] - 1)
        tokens += ids.shape[1] - 1
    return total / tokens


def test_the_first_block_carrying_a_massive_activation_is_found(gpt2):
    assert first_massive_block(gpt2, SENTENCES) is None
    with planted(gpt2):
        assert first_massive_block(gpt2, SENTENCES) == 1


def test_the_unablated_loss_is_transformers_own_and_mean_ablation_of_a_constant_is_none(gpt2):
    """Without intervention the loss is the model's own cross-entropy on the held-out
    sentences; the planted value is constant, so its calibrated mean is itself and setting
    it to the mean changes nothing, while zeroing it changes the loss."""
    with planted(gpt2):
        perplexity, _ = _effects(gpt2, 1)
        expected = _brute_force_loss(gpt2, SENTENCES[3:])
    rows = perplexity.set_index("condition")
    assert list(rows.index) == [condition.name for condition in CONDITIONS]
    assert rows.loc["none", "loss"] == pytest.approx(expected, rel=1e-5)
    assert rows.loc["none", "perplexity"] == pytest.approx(math.exp(expected), rel=1e-5)
    assert rows.loc["mean at block", "loss"] == pytest.approx(rows.loc["none", "loss"], abs=1e-5)
    assert abs(rows.loc["zero at block", "loss"] - rows.loc["none", "loss"]) > 1e-3
    assert rows.loc["zero at block", "replaced"] == len(SENTENCES) - 3
    assert rows.loc["zero at every block", "replaced"] >= rows.loc["zero at block", "replaced"]
    assert (rows["low"] <= rows["perplexity"]).all() and (rows["perplexity"] <= rows["high"]).all()
    assert rows.loc["none", "ratio_to_none"] == 1.0
    assert (rows["n_sentences"] == len(SENTENCES) - 3).all()


def test_attention_shares_are_the_model_s_own_weights_on_the_first_token(gpt2):
    """The first-token share of each block and head is the mean over queries after the
    first of the weight on key 0; here the massive keys are exactly the first tokens."""
    with planted(gpt2):
        _, attention = _effects(gpt2, 1)
        sums, queries = np.zeros((gpt2.n_layers, 2)), 0
        for sentence in SENTENCES[3:]:
            ids = gpt2.tokenizer(sentence, return_tensors="pt")["input_ids"]
            with torch.inference_mode():
                weights = gpt2.model(input_ids=ids, output_attentions=True).attentions
            for block, layer in enumerate(weights):
                sums[block] += layer[0, :, 1:, 0].sum(dim=1).numpy()
            queries += ids.shape[1] - 1
    unablated = attention[attention["condition"] == "none"].set_index(["block", "head"])
    for block in range(gpt2.n_layers):
        for head in range(2):
            row = unablated.loc[(block + 1, head)]
            assert row["first_token_share"] == pytest.approx(sums[block, head] / queries, abs=1e-5)
            assert row["massive_share"] == pytest.approx(row["first_token_share"], abs=1e-6)
            assert row["massive_after_first_share"] == 0
    assert (attention["attention_weights"] == "returned").all()


def test_without_a_massive_activation_only_the_unablated_condition_is_measured(gpt2):
    perplexity, attention = _effects(gpt2, None)
    assert list(perplexity["condition"]) == ["none"]
    assert (attention["massive_share"] == 0).all()
    with pytest.raises(ValueError, match="leave none after the 8 calibration"):
        _effects(gpt2, 1, calibration=len(SENTENCES))


def test_an_attention_that_returns_no_weights_is_said_in_the_table(gpt2, monkeypatch):
    forward = gpt2.model.forward

    def without_weights(*args, **kwargs):
        output = forward(*args, **kwargs)
        output.attentions = None
        return output

    monkeypatch.setattr(gpt2.model, "forward", without_weights)
    _, attention = _effects(gpt2, None)
    assert (attention["attention_weights"] == NOT_RETURNED).all()
    assert list(attention["block"]) == list(range(1, gpt2.n_layers + 1))


def test_decoders_are_told_from_masked_models(tiny_gpt2_dir, tiny_bert_dir):
    assert is_decoder(ModelSettings(name="g", source=str(tiny_gpt2_dir)))
    assert not is_decoder(ModelSettings(name="b", source=str(tiny_bert_dir)))
