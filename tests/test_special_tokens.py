"""The special tokens' rows of the position profile (`positions.SpecialTokenProfile`,
`extraction.special_tokens`, `steps.special_tokens`): against brute force over every pair
of rows, and on tiny random-init models, one with a planted sink."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from contextuality import backends
from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.index import IndexFiles, IndexSettings
from contextuality.corpus.settings import CorpusSettings
from contextuality.corpus.words import word_spans
from contextuality.extraction.special_tokens import sentence_batches, special_token_batches
from contextuality.extraction.units import sentence_units
from contextuality.files.tables import read_parquet_with_provenance
from contextuality.measures.positions import SPECIAL_COLUMNS, SpecialTokenProfile

LINES = [
    "The cat sat on the mat.",
    "A bank raised its rates again today.",
    "Rivers flood their banks in spring.",
    "Fires forced hundreds of residents to leave.",
    "Is it true that people voted?",
    "The market fell sharply.",
    "She read the long report twice before the meeting began.",
    "Rain.",
]


def _brute_force(words, word_sentence, special, special_sentence, special_kind, kind):
    """(anisotropy of `kind`, its cosine share), from the full matrix of cosines."""
    rows = np.concatenate([words, special]).astype(np.float64)
    sentence = np.concatenate([word_sentence, special_sentence])
    is_kind = np.concatenate([np.zeros(len(words), bool), np.asarray(special_kind) == kind])
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosines = unit @ unit.T
    different = sentence[:, None] != sentence[None, :]
    own = different & is_kind[:, None] & is_kind[None, :]
    involving = different & (is_kind[:, None] | is_kind[None, :])
    return cosines[own].mean(), cosines[involving].sum() / cosines[different].sum()


def _constructed(seed):
    """Six sentences of 2 to 6 word rows, each with a leading "[CLS]" that shares one
    direction and a trailing "[SEP]", and a second "[X]" in sentences 0 and 3."""
    rng = np.random.default_rng(seed)
    sizes = [2, 5, 3, 6, 4, 2]
    word_sentence = np.repeat(np.arange(6), sizes)
    words = rng.normal(size=(len(word_sentence), 5)) + 0.5
    kinds, sentence, positions = [], [], []
    for index, size in enumerate(sizes):
        kinds += ["[CLS]", "[SEP]"] + (["[X]"] if index in (0, 3) else [])
        sentence += [index] * (3 if index in (0, 3) else 2)
        positions += [0, size + 1] + ([size + 2] if index in (0, 3) else [])
    kinds = np.array(kinds, dtype=object)
    special = rng.normal(size=(len(kinds), 5))
    special[kinds == "[CLS]"] = 50 * np.array([1.0, 2, 0, 0, 1]) + special[kinds == "[CLS]"]
    return (
        words,
        word_sentence,
        special,
        np.array(sentence),
        kinds,
        np.array(positions),
    )


def test_profile_matches_brute_force_over_batches():
    words, word_sentence, special, special_sentence, kinds, positions = _constructed(3)
    whole = SpecialTokenProfile()
    whole.add(2, words, word_sentence, special, special_sentence, kinds, positions)
    table = whole.table()
    assert list(table.columns) == SPECIAL_COLUMNS
    assert table["bucket"].tolist() == ["[CLS]", "[SEP]", "[X]"]
    assert table["first_position"].tolist() == [0, -1, -1]
    assert table["n"].tolist() == [6, 6, 2]
    for row in table.itertuples():
        anisotropy, share = _brute_force(
            words, word_sentence, special, special_sentence, kinds, row.bucket
        )
        assert row.anisotropy == pytest.approx(anisotropy, abs=1e-12)
        assert row.cosine_share == pytest.approx(share, abs=1e-12)
        norms = np.linalg.norm(special[kinds == row.bucket], axis=1)
        assert row.mean_norm == pytest.approx(norms.mean())
        assert row.median_norm == pytest.approx(np.median(norms))
    cls = table.set_index("bucket").loc["[CLS]"]
    assert cls["anisotropy"] > 0.99 and cls["mean_norm"] > 40
    # The same sentences in two batches (whole sentences each) give the same rows.
    split = SpecialTokenProfile()
    for chosen in ([0, 1, 2], [3, 4, 5]):
        word_rows, special_rows = np.isin(word_sentence, chosen), np.isin(special_sentence, chosen)
        split.add(
            2,
            words[word_rows],
            word_sentence[word_rows],
            special[special_rows],
            special_sentence[special_rows],
            kinds[special_rows],
            positions[special_rows],
        )
    pd.testing.assert_frame_equal(split.table(), table, check_exact=False, rtol=1e-12)


def test_profile_without_special_tokens_is_empty():
    profile = SpecialTokenProfile()
    words = np.random.default_rng(0).normal(size=(5, 3))
    empty = np.zeros(0, dtype=np.int64)
    profile.add(0, words, np.array([0, 0, 1, 1, 2]), np.zeros((0, 3)), empty, empty, empty)
    table = profile.table()
    assert table.empty and list(table.columns) == SPECIAL_COLUMNS


def test_sentence_batches_keep_windows_together(tiny_bert_dir):
    spec = ModelSettings(name="b", source=str(tiny_bert_dir), max_length=8, long_sentences="window")
    loaded = load_model(spec)
    inputs = sentence_units(loaded, LINES).encode(0, len(LINES))
    batches = sentence_batches(inputs, token_budget=16)
    assert sorted(position for batch in batches for position in batch) == list(range(len(inputs)))
    owner = {}
    for number, batch in enumerate(batches):
        for position in batch:
            assert owner.setdefault(inputs[position].sentence, number) == number


def _collected(loaded, layers):
    inputs = sentence_units(loaded, LINES, word_spans(LINES)).encode(0, len(LINES))
    found = {layer: [] for layer in layers}
    for batch in special_token_batches(loaded, inputs, layers, token_budget=40):
        for rows in batch:
            found[rows.layer].append(rows)
    return {
        layer: [
            np.concatenate([getattr(rows, field) for rows in batches])
            for field in (
                "words",
                "word_sentence",
                "special",
                "special_sentence",
                "special_kind",
                "special_position",
            )
        ]
        for layer, batches in found.items()
    }


def test_bert_special_tokens_are_the_models_states(tiny_bert_dir):
    import torch

    loaded = load_model(ModelSettings(name="b", source=str(tiny_bert_dir)))
    collected = _collected(loaded, (0, 1, 2))
    words, _, special, special_sentence, kinds, positions = collected[2]
    assert set(kinds) == {"[CLS]", "[SEP]"}
    assert np.bincount(special_sentence).tolist() == [2] * len(LINES)
    assert (positions[kinds == "[CLS]"] == 0).all()
    encoded = loaded.tokenizer(LINES[6], return_tensors="pt")
    with torch.inference_mode():
        states = loaded.model(**encoded, output_hidden_states=True).hidden_states
    chosen = special_sentence == 6
    np.testing.assert_allclose(special[chosen], states[2][0, [0, -1]].numpy(), atol=1e-5)
    assert len(words) == sum(len(spans) for spans in word_spans(LINES))


@pytest.fixture
def corpus(tmp_path):
    from contextuality import steps

    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(LINES) + "\n")
    read = {"path": str(text), "split_sentences": False}
    settings = {"source": "text", "name": "t", "text": read}
    sentences = tmp_path / "sentences.parquet"
    steps.sentences(CorpusSettings.from_config(settings), [text], sentences)
    names = ("occ.parquet", "vocab.parquet", "index.json")
    index = IndexFiles(*(tmp_path / name for name in names))
    steps.occurrence_index(sentences, IndexSettings(min_contexts=1), index)
    return sentences, index


@pytest.fixture
def sink_gpt2_dir(tiny_gpt2_dir, tmp_path):
    """The tiny GPT-2 with a planted sink: its BOS token's input embedding 1,000 times its own."""
    from transformers import GPT2Model

    directory = tmp_path / "sink-gpt2"
    shutil.copytree(tiny_gpt2_dir, directory)
    model = GPT2Model.from_pretrained(directory)
    bos = model.config.bos_token_id
    with __import__("torch").no_grad():
        model.wte.weight[bos] *= 1000
    model.save_pretrained(directory)
    return directory


def test_planted_sink_shows_in_the_special_token_rows(sink_gpt2_dir, corpus, tmp_path):
    from contextuality import steps

    sentences, index = corpus
    settings = {"source": str(sink_gpt2_dir), "device": "cpu", "add_bos": True}
    output = tmp_path / "special.parquet"
    table = steps.special_tokens(
        backends.model_settings("sink", settings), sentences, index, output, sample_size=6, seed=0
    )
    read, provenance = read_parquet_with_provenance(output)
    pd.testing.assert_frame_equal(read, table, check_dtype=False)
    assert provenance["step"] == "special_tokens" and provenance["sample_size"] == 6
    assert table["bucket"].unique().tolist() == ["<|endoftext|>"]
    assert table["layer"].tolist() == [0, 1, 2]
    assert (table["first_position"] == 0).all() and (table["n"] == 6).all()
    assert (table["kind"] == "special token").all() and (table["transform"] == "none").all()
    first = table.set_index("layer").loc[0]
    # Every sentence's BOS at the embedding output is the same vector: anisotropy 1.
    assert first["anisotropy"] == pytest.approx(1.0, abs=1e-9)
    # Its norm far above the words' (brute force below, from the same forward pass).
    loaded = load_model(ModelSettings(name="sink", source=str(sink_gpt2_dir), add_bos=True))
    collected = _collected(loaded, (0, 1, 2))
    for layer, rows in collected.items():
        words, word_sentence, special, special_sentence, kinds, _ = rows
        word_norm = np.median(np.linalg.norm(words, axis=1))
        if layer == 0:
            assert first["mean_norm"] > 100 * word_norm
        anisotropy, share = _brute_force(
            words, word_sentence, special, special_sentence, kinds, "<|endoftext|>"
        )
        # The step samples 6 of the 8 sentences: its rows are checked on the 8 here.
        profile = SpecialTokenProfile()
        profile.add(layer, *rows)
        row = profile.table().iloc[0]
        assert row["anisotropy"] == pytest.approx(anisotropy, abs=1e-9)
        assert row["cosine_share"] == pytest.approx(share, abs=1e-9)


def test_gpt2_without_bos_has_no_rows(tiny_gpt2_dir, corpus, tmp_path, caplog):
    from contextuality import steps

    sentences, index = corpus
    settings = {"source": str(tiny_gpt2_dir), "device": "cpu"}
    output = tmp_path / "special.parquet"
    with caplog.at_level("WARNING"):
        table = steps.special_tokens(
            backends.model_settings("plain", settings),
            sentences,
            index,
            output,
            sample_size=8,
            seed=0,
        )
    assert table.empty
    assert "model plain: its inputs hold no special token" in caplog.text
    read, _ = read_parquet_with_provenance(output)
    assert read.empty and set(SPECIAL_COLUMNS) <= set(read.columns)


def test_positions_table_puts_the_special_tokens_after_each_layers_words(tmp_path):
    from contextuality import steps
    from contextuality.files.tables import write_parquet

    words = pd.DataFrame(
        {
            "bucket": ["1", "0"],
            "first_position": [1, 0],
            "n": [3, 4],
            "mean_norm": [1.0, 2.0],
            "median_norm": [1.0, 2.0],
            "anisotropy": [0.1, 0.2],
            "model": "m",
            "transform": "none",
            "layer": 0,
        }
    )
    profile = SpecialTokenProfile()
    sample = _constructed(1)
    profile.add(0, *sample)
    special = profile.table().assign(model="m", transform="none", kind="special token")
    write_parquet(words, tmp_path / "words.parquet", {"step": "measures"})
    write_parquet(special, tmp_path / "special.parquet", {"step": "special_tokens"})
    table = steps.positions_table(
        [tmp_path / "words.parquet"], tmp_path / "positions.tsv", [tmp_path / "special.parquet"]
    )
    assert table["bucket"].tolist() == ["0", "1", "[SEP]", "[X]", "[CLS]"]
    assert table["kind"].tolist() == ["word position"] * 2 + ["special token"] * 3
    assert table["cosine_share"].iloc[:2].isna().all()
    assert table["cosine_share"].iloc[2:].notna().all()
