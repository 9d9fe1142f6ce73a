"""A subword that spans several words gives its vector to each of them.

MiniLM's WordPiece reads "4:00pm" as "4" ":" "00pm" while the words are "4:00" and "pm":
"00pm" is the only subword of "pm" and must serve both words. The references share no
extraction code: overlaps are enumerated pair by pair, and a word's vector pools the
hidden states of every subword whose character span overlaps its own, in a forward pass
of the sentence alone.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.words import word_spans
from contextuality.extraction.forward import pool_subwords
from contextuality.extraction.units import align_to_words, sentence_units

from extraction import extract_every_layer
from references import word_vectors_by_overlap

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "at", "4", ":", "00pm", "it", "was",
    "today", ".", "5", "00", "##pm", "pm",
]  # fmt: skip
SENTENCES = ["it was 4:00pm today.", "at 5:00pm", "4:00pm", "at 5:00 pm."]


def _pairs(alignment) -> set[tuple[int, int]]:
    """Every (subword, word) pair an alignment gives a vector along."""
    first = {(s, int(w)) for s, w in enumerate(alignment.token_unit) if w >= 0}
    return first | {(int(s), int(w)) for s, w in alignment.shared}


def _overlaps(offsets, spans) -> set[tuple[int, int]]:
    return {
        (s, w)
        for s, (start, end) in enumerate(offsets)
        for w, (word_start, word_end) in enumerate(spans)
        if start < end and start < word_end and end > word_start
    }


def test_a_subword_goes_to_every_word_it_overlaps():
    # "at 4:00pm ok": words at, 4:00, pm, ok; subwords at, 4, :, 00pm, " ", "", ok, :00pm
    spans = [(0, 2), (3, 7), (7, 9), (10, 12)]
    offsets = [(0, 2), (3, 4), (4, 5), (5, 9), (9, 10), (10, 10), (10, 12), (4, 12)]
    alignment = align_to_words(offsets, spans)
    assert alignment.token_unit.tolist() == [0, 1, 1, 1, -1, -1, 3, 1]
    assert alignment.shared.tolist() == [[3, 2], [7, 2], [7, 3]]
    assert (alignment.spanning, alignment.sharing, alignment.outside) == (2, 3, 2)
    no_words = align_to_words([(0, 3)], [])
    assert no_words.token_unit.tolist() == [-1] and no_words.n_units == 0
    empty = align_to_words([], spans)
    assert empty.shared.shape == (0, 2) and empty.spanning == empty.sharing == 0


def test_alignment_pairs_equal_every_overlap():
    rng = np.random.default_rng(0)
    for _ in range(200):
        cuts = np.sort(rng.choice(np.arange(1, 60), size=rng.integers(2, 20), replace=False))
        spans = [(int(a), int(b)) for a, b in zip(cuts[::2], cuts[1::2], strict=False) if b > a]
        starts = np.sort(rng.integers(0, 60, size=rng.integers(1, 15)))
        offsets = [(int(a), int(a + rng.integers(0, 12))) for a in starts]
        alignment = align_to_words(offsets, spans)
        assert _pairs(alignment) == _overlaps(offsets, spans)
        assert alignment.outside == sum(
            not any(s == t for s, _ in _overlaps(offsets, spans)) for t in range(len(offsets))
        )


@pytest.mark.parametrize("pooling", ["mean", "first", "last"])
def test_pooling_gives_a_shared_subword_to_each_of_its_words(pooling):
    # 2 layers, 8 flattened tokens; token 3 spans words 1 and 2, token 6 words 3, 4 and 5
    hidden = torch.randn(2, 8, 3, generator=torch.Generator().manual_seed(0))
    token_word = torch.tensor([-1, 0, 1, 1, 2, -1, 3, -1])
    shared = (torch.tensor([3, 6, 6]), torch.tensor([2, 4, 5]))
    pooled, counts = pool_subwords(hidden, token_word, 7, pooling, shared)
    tokens = {0: [1], 1: [2, 3], 2: [3, 4], 3: [6], 4: [6], 5: [6], 6: []}
    assert counts.tolist() == [len(tokens[word]) for word in range(7)]
    assert torch.isnan(pooled[:, 6]).all()
    for word in range(6):
        chosen = {"mean": tokens[word], "first": tokens[word][:1], "last": tokens[word][-1:]}
        torch.testing.assert_close(pooled[:, word], hidden[:, chosen[pooling]].mean(dim=1))


@pytest.fixture(scope="module")
def pm_bert(tmp_path_factory):
    """A 2-layer random-init BERT whose WordPiece vocabulary holds "00pm"."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory = tmp_path_factory.mktemp("pm-bert")
    vocab = {token: i for i, token in enumerate(VOCAB)}
    BertTokenizerFast(vocab=vocab, do_lower_case=False).save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(config).eval().save_pretrained(directory)
    return directory


@pytest.mark.parametrize("pooling", ["mean", "first", "last"])
def test_pm_gets_the_vector_of_00pm(pm_bert, tmp_path, pooling):
    loaded = load_model(ModelSettings(name="pm", source=str(pm_bert)))
    assert loaded.tokenizer.tokenize("4:00pm") == ["4", ":", "00pm"]
    report, vectors = extract_every_layer(loaded, SENTENCES, tmp_path, pooling=pooling)
    layers = range(loaded.n_layers + 1)
    expected = word_vectors_by_overlap(
        loaded.tokenizer, loaded.model, SENTENCES, word_spans(SENTENCES), layers, pooling
    )
    assert np.isfinite(vectors).all() and report.words_without_tokens == 0
    np.testing.assert_allclose(vectors, expected, rtol=2e-3, atol=2e-3 * np.abs(expected).max())
    assert (report.subwords_spanning_words, report.words_sharing_subwords) == (3, 6)


def test_windows_keep_each_word_once_with_its_shared_subwords(pm_bert, tmp_path):
    sentence = " ".join(["at 4:00pm"] * 8)  # 32 subwords, 24 words
    loaded = load_model(
        ModelSettings(name="pm", source=str(pm_bert), max_length=9, long_sentences="window")
    )
    encoded = sentence_units(loaded, [sentence]).encode(0, 1)
    assert len(encoded) > 2
    served = [
        {*item.word_index[item.word_index >= 0].tolist(), *item.shared[:, 1].tolist()}
        for item in encoded
    ]
    assert sorted(word for words in served for word in words) == list(range(24))
    assert sum(len(item.shared) for item in encoded) == 8  # each "pm" once, by its "00pm"
    pm = VOCAB.index("00pm")
    for item in encoded:  # a shared pair names the window's "00pm" and the "pm" after it
        for position, word in item.shared:
            assert item.input_ids[position] == pm and word % 3 == 2
    report, vectors = extract_every_layer(loaded, [sentence], tmp_path)
    assert report.words_without_tokens == report.words_truncated == 0
    assert np.isfinite(vectors).all()
