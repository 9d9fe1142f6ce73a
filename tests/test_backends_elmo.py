"""ELMo from the published file layout: character ids, the forward pass against an
independent step-by-step implementation, batch invariance, loading errors, the release
download and extraction into shards."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from elmo_files import reference_forward

from contextuality.backends import (
    count_hidden_layers,
    load_model,
    model_settings,
    recorded_settings,
)
from contextuality.backends.base import layer_output
from contextuality.backends.elmo.release import RELEASE_FILES, RELEASES, fetch_release
from contextuality.backends.elmo.synthetic import TINY_OPTIONS, write_random_files
from contextuality.backends.elmo.weights import (
    BEGIN_SENTENCE,
    END_SENTENCE,
    boundary_character_ids,
    word_character_ids,
)
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.words import word_spans
from contextuality.errors import ConfigError, InputDataError, ModelLoadError

from extraction import extract_every_layer

SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Bushfires", "forced", "hundreds", "of", "résidents", "to", "leave"],
    ["A"],
    ["x" * 60, "naïve", "café", "dog", "ran", "in", "the", "park", "and", "barked", "."],
]


@pytest.fixture(scope="module")
def loaded(tiny_elmo_dir):
    return load_model(ModelSettings("elmo", str(tiny_elmo_dir), loader="elmo"))


def _batch(loaded, sentences):
    """Model inputs of word lists, padded as extraction pads them."""
    characters = loaded.tokenizer
    rows = []
    for words in sentences:
        text = " ".join(words)
        starts = np.cumsum([0] + [len(word) + 1 for word in words[:-1]])
        spans = [(start, start + len(word)) for start, word in zip(starts, words, strict=True)]
        encoding = characters.encode_words(text, spans)
        rows.append(np.concatenate([encoding.prefix, encoding.content, encoding.suffix]))
    longest = max(len(row) for row in rows)
    ids = np.zeros((len(rows), longest, characters.max_characters), dtype=np.int64)
    mask = np.zeros((len(rows), longest), dtype=np.int64)
    for position, row in enumerate(rows):
        ids[position, : len(row)] = row
        mask[position, : len(row)] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)


def _forward(loaded, sentences):
    """Each sentence's (n_layers + 1, n_words, 2p) vectors from one batched forward pass."""
    ids, mask = _batch(loaded, sentences)
    with torch.inference_mode():
        states = torch.stack(loaded.model(input_ids=ids, attention_mask=mask).hidden_states)
    return [states[:, row, 1 : len(words) + 1].numpy() for row, words in enumerate(sentences)]


def test_character_ids_are_bilm_tfs_plus_one():
    ids = word_character_ids("aé")
    assert ids[:5].tolist() == [259, 98, 0xC3 + 1, 0xA9 + 1, 260]
    assert (ids[5:] == 261).all() and len(ids) == 50
    long = word_character_ids("y" * 60)
    assert long[0] == 259 and (long[1:49] == ord("y") + 1).all() and long[49] == 260
    assert boundary_character_ids(BEGIN_SENTENCE)[:4].tolist() == [259, 257, 260, 261]
    assert boundary_character_ids(END_SENTENCE)[:4].tolist() == [259, 258, 260, 261]


@pytest.mark.parametrize("skip_connections", [True, False])
def test_forward_matches_the_step_by_step_reference(tmp_path, skip_connections):
    """All three layers of every sentence, batched, agree with bilm-tf's equations run one
    sentence and one step at a time in float64, clipping included."""
    options = copy.deepcopy(TINY_OPTIONS)
    options["lstm"]["use_skip_connections"] = skip_connections
    options_path, weights_path = write_random_files(tmp_path, options, seed=3)
    loaded = load_model(ModelSettings("elmo", str(tmp_path), loader="elmo"))
    clipped = {"cell": 0, "projection": 0}
    for words, ours in zip(SENTENCES, _forward(loaded, SENTENCES), strict=True):
        expected, counts, _ = reference_forward(options_path, weights_path, words)
        assert ours.shape == expected.shape == (3, len(words), 16)
        np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=2e-5)
        clipped = {name: clipped[name] + counts[name] for name in clipped}
    assert clipped["cell"] > 0 and clipped["projection"] > 0  # both clips were exercised


def test_skip_connections_change_the_second_layer_only(tmp_path):
    options = copy.deepcopy(TINY_OPTIONS)
    options["lstm"]["use_skip_connections"] = False
    write_random_files(tmp_path / "plain", options)
    write_random_files(tmp_path / "skip", TINY_OPTIONS)
    plain, skip = (
        _forward(
            load_model(ModelSettings("e", str(tmp_path / name), loader="elmo")), SENTENCES[:1]
        )[0]
        for name in ("plain", "skip")
    )
    np.testing.assert_array_equal(plain[:2], skip[:2])
    assert not np.allclose(plain[2], skip[2])


def test_layer_0_is_the_token_representation_twice(loaded):
    (vectors,) = _forward(loaded, SENTENCES[:1])
    np.testing.assert_array_equal(vectors[0, :, :8], vectors[0, :, 8:])
    the, the_again = vectors[0, 0], vectors[0, 4]  # "The" and "the" differ, by case
    assert not np.allclose(the, the_again)
    np.testing.assert_allclose(_forward(loaded, [["the"]])[0][0, 0], the_again, atol=1e-6)


def test_a_sentences_vectors_do_not_depend_on_its_batch(loaded):
    alone = [_forward(loaded, [words])[0] for words in SENTENCES]
    together = _forward(loaded, SENTENCES)
    reversed_order = _forward(loaded, SENTENCES[::-1])[::-1]
    for single, batched, other in zip(alone, together, reversed_order, strict=True):
        np.testing.assert_allclose(batched, single, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(other, single, rtol=1e-5, atol=1e-6)


def test_the_backward_direction_reads_right_to_left(loaded):
    """Changing the last word changes the forward halves of that word only, and the
    backward halves of every word before it."""
    first, second = _forward(loaded, [["a", "b", "c", "d"], ["a", "b", "c", "e"]])
    forward, backward = slice(0, 8), slice(8, 16)
    np.testing.assert_allclose(first[1:, :3, forward], second[1:, :3, forward], atol=1e-6)
    assert not np.allclose(first[1, :3, backward], second[1, :3, backward])


def test_carried_states_continue_from_the_previous_sentence(tiny_elmo_dir, loaded, tmp_path):
    """lstm_states: carried, through the extraction path, gives what the reference gives
    when each sentence starts from the previous sentence's final states (the first from
    zeros), twice in a row (a new pass starts from zeros again); layer 0 does not change."""
    carried = load_model(
        ModelSettings("e", str(tiny_elmo_dir), loader="elmo", lstm_states="carried")
    )
    assert carried.sequential
    sentences = [" ".join(words) for words in SENTENCES]
    words = [
        [sentence[start:end] for start, end in spans]
        for sentence, spans in zip(sentences, word_spans(sentences), strict=True)
    ]
    expected, states = [], None
    for sentence_words in words:
        vectors, _, states = reference_forward(
            tiny_elmo_dir / "options.json", tiny_elmo_dir / "weights.hdf5", sentence_words, states
        )
        expected.append(vectors)
    expected = np.concatenate(expected, axis=1)
    for run in ("first", "second"):
        _, vectors = extract_every_layer(carried, sentences, tmp_path / run)
        np.testing.assert_allclose(vectors, expected, rtol=2e-3, atol=2e-3)
    with pytest.raises(ValueError, match="one unpadded sentence per call"):
        _forward(carried, SENTENCES[:2])
    per_sentence = np.concatenate(_forward(loaded, words), axis=1)
    np.testing.assert_allclose(vectors[0], per_sentence[0], atol=2e-3)
    first = len(words[0])  # the first sentence starts from zeros either way
    np.testing.assert_allclose(vectors[:, :first], per_sentence[:, :first], atol=2e-3)
    assert not np.allclose(vectors[1:, first:], per_sentence[1:, first:], atol=1e-2)


def test_layers_are_described_and_counted(loaded, tiny_elmo_dir):
    conventions = loaded.layer_conventions()
    assert loaded.n_layers == 2 and loaded.hidden_size == 16
    assert layer_output(0, 2, conventions).startswith("character-CNN token representation")
    assert layer_output(1, 2, conventions) == "biLSTM layer 1, [forward; backward]"
    assert "skip connection" in layer_output(2, 2, conventions)
    assert count_hidden_layers(ModelSettings("e", str(tiny_elmo_dir), loader="elmo")) == 2
    assert count_hidden_layers(ModelSettings("e", "elmo-original", loader="elmo")) == 2
    assert loaded.revision == loaded.file_checksums["weights.hdf5"]


def test_published_file_names_are_found(tmp_path):
    write_random_files(tmp_path, stem="elmo_2x1024_128_2048cnn_1xhighway")
    loaded = load_model(ModelSettings("e", str(tmp_path), loader="elmo"))
    assert loaded.hidden_size == 16


def test_pinned_revision_is_the_weights_checksum(tiny_elmo_dir, loaded):
    digest = loaded.revision
    assert load_model(
        ModelSettings("e", str(tiny_elmo_dir), loader="elmo", revision=digest)
    ).revision
    with pytest.raises(ModelLoadError, match="not the revision"):
        load_model(ModelSettings("e", str(tiny_elmo_dir), loader="elmo", revision="0" * 64))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda file: file.__delitem__("CNN_high_1/W_carry"), "no dataset CNN_high_1/W_carry"),
        (lambda file: _replace(file, "CNN_proj/W_proj", np.zeros((16, 9))), "CNN_proj/W_proj"),
        (lambda file: _replace(file, "char_embed", np.zeros((100, 4))), "char_embed"),
    ],
)
def test_damaged_weights_are_refused_naming_the_dataset(tmp_path, damage, message):
    write_random_files(tmp_path)
    with h5py.File(tmp_path / "weights.hdf5", "a") as file:
        damage(file)
    with pytest.raises(ModelLoadError, match=message):
        load_model(ModelSettings("e", str(tmp_path), loader="elmo"))


def _replace(file, name, value):
    del file[name]
    file[name] = value


def test_bad_options_and_missing_files_are_refused(tmp_path):
    write_random_files(tmp_path)
    options = json.loads((tmp_path / "options.json").read_text())
    del options["lstm"]["projection_dim"]
    (tmp_path / "options.json").write_text(json.dumps(options))
    with pytest.raises(ModelLoadError, match="not an ELMo options file.*projection_dim"):
        load_model(ModelSettings("e", str(tmp_path), loader="elmo"))
    (tmp_path / "weights.hdf5").unlink()
    with pytest.raises(ModelLoadError, match="one weights.hdf5 or one \\*weights.hdf5"):
        load_model(ModelSettings("e", str(tmp_path), loader="elmo"))
    with pytest.raises(ModelLoadError, match="download_elmo"):
        load_model(ModelSettings("e", "elmo-small", loader="elmo"))


@pytest.mark.parametrize(
    "setting",
    [{"units": "subword"}, {"add_bos": True}, {"last_layer": "before_final_norm"}],
)
def test_settings_that_mean_nothing_for_elmo_are_refused(setting):
    with pytest.raises(ConfigError, match=f"{next(iter(setting))} cannot be set"):
        model_settings("e", {"source": "elmo-original", "loader": "elmo", **setting})


def test_lstm_states_is_elmos_setting_alone():
    """Recorded (and hashed) for ELMo only, so that it changes no transformer's settings."""
    assert "lstm_states" not in recorded_settings(model_settings("m", {"source": "x"}))
    section = {"source": "elmo-original", "loader": "elmo", "lstm_states": "carried"}
    spec = model_settings("e", section)
    assert recorded_settings(spec)["lstm_states"] == "carried"
    assert model_settings("e", recorded_settings(spec)) == spec
    with pytest.raises(ConfigError, match="lstm_states is ELMo's setting"):
        model_settings("m", {"source": "x", "lstm_states": "carried"})
    with pytest.raises(ConfigError, match="models.e.lstm_states: 'stateful' is not one of"):
        model_settings("e", {**section, "lstm_states": "stateful"})


def test_release_from_a_mirror_is_checked(tmp_path):
    release = RELEASES["elmo-small"]
    mirror = tmp_path / "mirror"
    write_random_files(mirror, stem=release.stem)
    destinations = {file: tmp_path / "out" / file for file in RELEASE_FILES}
    digests = fetch_release("elmo-small", destinations, mirror)
    assert set(digests) == {release.published_name(file) for file in RELEASE_FILES}
    assert all(path.is_file() for path in destinations.values())
    assert release.url("weights.hdf5").endswith(
        "2x1024_128_2048cnn_1xhighway/elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5"
    )
    wrong = {release.published_name("weights.hdf5"): "0" * 64}
    with pytest.raises(InputDataError, match="checksum differs"):
        fetch_release("elmo-small", destinations, mirror, wrong)
    with h5py.File(mirror / release.published_name("weights.hdf5"), "a") as file:
        del file["CNN/b_cnn_2"]
    with pytest.raises(InputDataError, match="elmo-small.*CNN/b_cnn_2"):
        fetch_release("elmo-small", destinations, mirror)
    assert not any(path.exists() for path in destinations.values())
    with pytest.raises(ConfigError, match="unknown ELMo release"):
        fetch_release("elmo-huge", destinations, mirror)


def test_extraction_writes_one_vector_per_word(loaded, tmp_path):
    """Through the extraction path (blocks, token-budget batches, shards): each word's
    stored vectors are the forward pass's, to float16 precision."""
    sentences = [" ".join(words) for words in SENTENCES]
    small_batches = {"token_budget": 24}
    report, vectors = extract_every_layer(loaded, sentences, tmp_path, **small_batches)

    words = [
        [sentence[start:end] for start, end in spans]
        for sentence, spans in zip(sentences, word_spans(sentences), strict=True)
    ]
    assert report.n_occurrences == sum(map(len, words)) == vectors.shape[1]
    assert report.n_batches > 1 and report.words_without_tokens == 0
    expected = np.concatenate(_forward(loaded, words), axis=1)
    np.testing.assert_allclose(vectors, expected, rtol=2e-3, atol=2e-3)


@pytest.mark.skipif(
    not os.environ.get("CONTEXTUALITY_ALLENNLP_PYTHON"),
    reason="set CONTEXTUALITY_ALLENNLP_PYTHON to a Python with allennlp (tests/allennlp_elmo.py)",
)
def test_agrees_with_allennlps_elmo(tmp_path):
    """AllenNLP's _ElmoBiLm gives the same vectors: from zero states for a batch, and, one
    sentence per call in order (its states carried over, as the paper's ElmoEmbedder ran),
    the vectors of lstm_states: carried."""
    options_path, weights_path = write_random_files(tmp_path, seed=5)
    sentences = [" ".join(words) for words in SENTENCES]
    words = [
        [sentence[start:end] for start, end in spans]
        for sentence, spans in zip(sentences, word_spans(sentences), strict=True)
    ]
    (tmp_path / "sentences.json").write_text(json.dumps(words))
    subprocess.run(
        [
            os.environ["CONTEXTUALITY_ALLENNLP_PYTHON"],
            str(Path(__file__).with_name("allennlp_elmo.py")),
            str(options_path),
            str(weights_path),
            str(tmp_path / "sentences.json"),
            str(tmp_path / "allennlp.npz"),
        ],
        check=True,
    )
    theirs = np.load(tmp_path / "allennlp.npz")
    loaded = load_model(ModelSettings("e", str(tmp_path), loader="elmo"))
    for row, ours in enumerate(_forward(loaded, words)):
        np.testing.assert_allclose(ours, theirs[f"batch_{row}"], rtol=1e-5, atol=1e-5)
    carried = load_model(ModelSettings("e", str(tmp_path), loader="elmo", lstm_states="carried"))
    _, ours = extract_every_layer(carried, sentences, tmp_path / "carried")
    expected = np.concatenate([theirs[f"sequential_{row}"] for row in range(len(words))], axis=1)
    np.testing.assert_allclose(ours, expected, rtol=2e-3, atol=2e-3)  # stored as float16
