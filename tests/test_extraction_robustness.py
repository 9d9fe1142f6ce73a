"""Extraction under stress: sentences longer than the model window, device out-of-memory,
a half-precision forward pass that overflows, and a failing disk, each handled without
changing or half-writing any output."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from contextuality.backends import load_model
from contextuality.backends.elmo.synthetic import write_random_files
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.words import split_words, word_spans
from contextuality.errors import DeviceMemoryError, NonFiniteValueError, StorageError
from contextuality.extraction import forward as forward_module
from contextuality.extraction import run as run_module
from contextuality.extraction.units import assign_windows, sentence_units
from contextuality.storage import shards as shards_module
from contextuality.storage.shards import ShardSetWriter, load_shard

from extraction import extract_every_layer, extract_into_shards

LONG = "The cat sat on the mat while the dog ran in the park and the bank raised rates again."
SHORT = "The cat sat."
SENTENCES = [SHORT, LONG, "A dog ran.", LONG + " The fox jumps."]


@pytest.fixture(scope="module")
def bert(tiny_bert_dir):
    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


def test_window_assignment_picks_the_most_central_window():
    windows = [[-1, 0, 1, 2, 3, -1], [-1, 2, 3, 4, 5, -1]]
    # word 2: centrality 1 in window 0 (position 3 of content 1..4), 0 in window 1.
    # word 3: 0 in window 0 (last content position), 1 in window 1.
    assert assign_windows(windows) == [[-1, 0, 1, 2, -1, -1], [-1, -1, 3, 4, 5, -1]]
    # A tie goes to the earlier window.
    assert assign_windows([[-1, 0, 1, -1], [-1, 1, 2, -1]]) == [
        [-1, 0, 1, -1],
        [-1, -1, 2, -1],
    ]


def _windowed(loaded, max_length=10, overlap=3):
    spec = dataclasses.replace(
        loaded.spec, long_sentences="window", window_overlap=overlap, max_length=max_length
    )
    return dataclasses.replace(loaded, spec=spec, max_length=max_length)


def test_windows_cover_every_word(bert, tmp_path):
    encoded = sentence_units(_windowed(bert), SENTENCES).encode(0, len(SENTENCES))
    assert all(len(item.input_ids) <= 10 for item in encoded)
    for position, sentence in enumerate(SENTENCES):
        parts = [item for item in encoded if item.sentence == position]
        windows_of: dict[int, list[int]] = {}
        for window, item in enumerate(parts):
            for word in set(item.word_index[item.word_index >= 0].tolist()):
                windows_of.setdefault(word, []).append(window)
        # every word gets its vector from exactly one window
        assert sorted(windows_of) == list(range(len(split_words(sentence))))
        assert all(len(windows) == 1 for windows in windows_of.values())
        assert len(parts) > 1 or len(split_words(sentence)) < 8


def test_window_mode_loses_no_word_and_keeps_short_sentences(bert, tmp_path):
    truncated_report, truncated = extract_every_layer(
        bert, SENTENCES, tmp_path / "t", max_length=10
    )
    windowed_report, windowed = extract_every_layer(
        bert, SENTENCES, tmp_path / "w", max_length=10, long_sentences="window", window_overlap=3
    )
    assert truncated_report.words_truncated > 0
    assert np.isnan(truncated).any()
    assert windowed_report.words_truncated == 0 and windowed_report.sentences_truncated == 0
    assert windowed_report.sentences_windowed == 2
    assert np.isfinite(windowed).all()
    # Sentences that fit the window are untouched by windowing.
    short_rows = len(split_words(SHORT))
    np.testing.assert_allclose(windowed[:, :short_rows], truncated[:, :short_rows], atol=1e-3)


def test_windowed_word_equals_a_forward_pass_of_its_window(bert, tmp_path):
    """Each window is [CLS] + a contiguous slice of the running text's subwords + [SEP], and
    a word's vector is its pooled vector in one window that holds all of its subwords."""
    _, windowed = extract_every_layer(
        bert, [LONG], tmp_path / "w", max_length=10, long_sentences="window", window_overlap=3
    )
    full = bert.tokenizer(LONG, add_special_tokens=False, return_offsets_mapping=True)
    content, offsets = full["input_ids"], full["offset_mapping"]
    spans = word_spans([LONG])[0]
    owner = [
        next((w for w, (a, b) in enumerate(spans) if start < b and end > a), None)
        for start, end in offsets
    ]
    windows = sentence_units(_windowed(bert), [LONG]).encode(0, 1)
    assert len(windows) > 1
    candidates: dict[int, list[np.ndarray]] = {}
    for window in windows:
        ids = window.input_ids.tolist()
        assert ids[0] == bert.tokenizer.cls_token_id and ids[-1] == bert.tokenizer.sep_token_id
        inner = ids[1:-1]
        first = next(
            a for a in range(len(content)) if content[a : a + len(inner)] == inner
        )  # a contiguous slice of the sentence's subwords
        with torch.no_grad():
            output = bert.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
        hidden = torch.stack(output.hidden_states)[:, 0].numpy()
        inside = owner[first : first + len(inner)]
        for word in set(inside) - {None}:
            if owner.count(word) == inside.count(word):  # all its subwords are here
                positions = [1 + i for i, w in enumerate(inside) if w == word]
                candidates.setdefault(word, []).append(hidden[:, positions].mean(axis=1))
    assert sorted(candidates) == list(range(len(spans)))
    for word, options in candidates.items():
        assert min(np.abs(windowed[:, word] - option).max() for option in options) < 2e-3


class _SimulatedDevice:
    """Wraps forward_batch and raises out-of-memory above a padded-token limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.padded_sizes: list[int] = []
        self.forward = forward_module.forward_batch

    def __call__(self, loaded, batch, layers, first_rows, dtype):
        padded = len(batch) * max(len(item.input_ids) for item in batch)
        if padded > self.limit:
            raise torch.OutOfMemoryError("simulated: CUDA out of memory")
        self.padded_sizes.append(padded)
        return self.forward(loaded, batch, layers, first_rows, dtype)


def test_out_of_memory_halves_the_budget_and_changes_nothing(bert, tmp_path, monkeypatch):
    _, expected = extract_every_layer(bert, SENTENCES, tmp_path / "free", token_budget=4096)
    device = _SimulatedDevice(limit=60)
    monkeypatch.setattr(run_module, "forward_batch", device)
    report, vectors = extract_every_layer(bert, SENTENCES, tmp_path / "tight", token_budget=4096)
    assert report.out_of_memory_retries >= 1
    assert report.token_budget <= 4096 // 2**report.out_of_memory_retries
    assert max(device.padded_sizes) <= 60
    np.testing.assert_allclose(vectors, expected, atol=1e-3)


def test_an_input_too_large_even_alone_is_a_clear_error(bert, tmp_path, monkeypatch):
    monkeypatch.setattr(run_module, "forward_batch", _SimulatedDevice(limit=3))
    with pytest.raises(DeviceMemoryError, match="does not fit in device memory") as caught:
        extract_every_layer(bert, SENTENCES, tmp_path / "none", token_budget=4096)
    assert "set models.tiny-bert.max_length lower" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not list((tmp_path / "none").iterdir())


class _OverflowingAutocast:
    """Wraps forward_batch as a device whose float16 autocast overflows: the passes not in
    float32 numbered in `overflowing` (0-based; None: every one), and every float32 pass
    too with `float32_overflows`, give +inf in their first row; a float32 pass of more than
    `float32_limit` padded tokens runs out of memory. Every pass computes in float32, so a
    batch run again gives exactly the plain extraction's vectors."""

    def __init__(self, overflowing=None, float32_overflows=False, float32_limit=None):
        self.overflowing = overflowing
        self.float32_overflows = float32_overflows
        self.float32_limit = float32_limit
        self.dtypes: list[str] = []
        self.forward = forward_module.forward_batch

    def __call__(self, loaded, batch, layers, first_rows, dtype):
        padded = len(batch) * max(len(item.input_ids) for item in batch)
        if dtype == "float32" and self.float32_limit and padded > self.float32_limit:
            raise torch.OutOfMemoryError("simulated: CUDA out of memory")
        half_passes = sum(kind != "float32" for kind in self.dtypes)
        self.dtypes.append(dtype)
        pooled, reached, rows = self.forward(loaded, batch, layers, first_rows, "float32")
        if dtype == "float32":
            overflows = self.float32_overflows
        else:
            overflows = self.overflowing is None or half_passes in self.overflowing
        if overflows:
            pooled = pooled.clone()  # an inference tensor takes no in-place change
            pooled[:, 0] = float("inf")
        return pooled, reached, rows


def _under_float16_autocast(monkeypatch, device: _OverflowingAutocast) -> None:
    """Run extraction's forward passes through `device`, as under float16 autocast."""
    monkeypatch.setattr(run_module, "forward_dtype", lambda device, spec: "float16")
    monkeypatch.setattr(run_module, "forward_batch", device)


def test_a_batch_that_overflows_its_autocast_is_run_again_in_float32(
    bert, tmp_path, monkeypatch, caplog
):
    """The first and third half-precision batches overflow: each is run again in float32,
    the vectors are the plain float32 extraction's to the bit, the report counts the two
    reruns (once each: tokens and batches are not counted twice) and one warning says so."""
    small_batches = {"token_budget": 40}
    plain_report, expected = extract_every_layer(
        bert, SENTENCES, tmp_path / "plain", **small_batches
    )
    device = _OverflowingAutocast(overflowing={0, 2})
    _under_float16_autocast(monkeypatch, device)
    with caplog.at_level("WARNING", logger=run_module.log.name):
        report, vectors = extract_every_layer(bert, SENTENCES, tmp_path / "f16", **small_batches)
    np.testing.assert_array_equal(vectors, expected)
    assert report.forward_dtype == "float16" and plain_report.forward_dtype == "float32"
    assert report.batches_rerun_in_float32 == 2 and plain_report.batches_rerun_in_float32 == 0
    assert device.dtypes.count("float32") == 2
    assert report.n_batches == plain_report.n_batches == device.dtypes.count("float16") > 2
    assert report.n_subword_tokens == plain_report.n_subword_tokens
    assert report.as_dict()["batches_rerun_in_float32"] == 2
    reruns = [
        record.getMessage() for record in caplog.records if "run again" in record.getMessage()
    ]
    assert reruns == [
        f"model tiny-bert: 2 of {report.n_batches} batches gave ±inf or NaN in float16 "
        "and were run again in float32; set models.tiny-bert.cuda_dtype to "
        "bfloat16 or float32 to run every batch so"
    ]


def test_a_float32_rerun_that_runs_out_of_memory_is_split(bert, tmp_path, monkeypatch):
    _, expected = extract_every_layer(bert, SENTENCES, tmp_path / "plain", token_budget=4096)
    device = _OverflowingAutocast(overflowing={0}, float32_limit=60)
    _under_float16_autocast(monkeypatch, device)
    report, vectors = extract_every_layer(bert, SENTENCES, tmp_path / "f16", token_budget=4096)
    assert report.batches_rerun_in_float32 == 1 and report.out_of_memory_retries >= 1
    assert device.dtypes.count("float32") > 1  # the rerun ran in smaller batches
    np.testing.assert_allclose(vectors, expected, atol=1e-3)


def test_values_still_non_finite_in_float32_are_refused(bert, tmp_path, monkeypatch):
    _under_float16_autocast(monkeypatch, _OverflowingAutocast(float32_overflows=True))
    with pytest.raises(NonFiniteValueError) as caught:
        extract_every_layer(bert, SENTENCES, tmp_path / "f16", token_budget=40)
    assert "produce them in float32 on cpu without autocast" in str(caught.value)
    assert "cuda_dtype" not in str(caught.value)
    assert not list((tmp_path / "f16").iterdir())


def test_non_finite_weights_are_refused_without_a_rerun(tiny_bert_dir, tmp_path, monkeypatch):
    damaged = load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))
    with torch.no_grad():
        damaged.model.embeddings.LayerNorm.weight[0] = float("nan")
    device = _OverflowingAutocast(overflowing=set())  # the NaN weights alone overflow
    _under_float16_autocast(monkeypatch, device)
    with pytest.raises(NonFiniteValueError, match="weights hold ±inf or NaN"):
        extract_every_layer(damaged, SENTENCES, tmp_path / "f16")
    assert "float32" not in device.dtypes


def test_a_model_that_carries_states_is_not_rerun(tmp_path, monkeypatch):
    """With ``lstm_states: carried`` the states have moved past the batch: no rerun, and
    the error names cuda_dtype."""
    write_random_files(tmp_path / "elmo")
    spec = ModelSettings("elmo", str(tmp_path / "elmo"), loader="elmo", lstm_states="carried")
    device = _OverflowingAutocast(overflowing={1})
    _under_float16_autocast(monkeypatch, device)
    with pytest.raises(NonFiniteValueError, match="set models.elmo.cuda_dtype to bfloat16"):
        extract_every_layer(load_model(spec), SENTENCES, tmp_path / "f16")
    assert "float32" not in device.dtypes


def test_a_failing_disk_stops_extraction_and_leaves_no_shard(bert, tmp_path, monkeypatch):
    def broken_write(self, first_row, block):
        raise OSError("No space left on device")

    monkeypatch.setattr(ShardSetWriter, "write", broken_write)
    with pytest.raises(OSError, match="No space left"):
        extract_every_layer(bert, SENTENCES, tmp_path / "full")
    assert not list((tmp_path / "full").iterdir())


def test_shards_that_would_not_fit_are_refused_before_the_forward_pass(bert, tmp_path, monkeypatch):
    """The shards' size is occurrences × layers × dim × bytes, recorded in the report; with
    less free space than that the extraction stops before any forward pass."""
    units = sentence_units(bert, SENTENCES)
    n_rows = int(units.counts.sum())
    layers = bert.n_layers + 1
    needed = n_rows * layers * bert.hidden_size * 2
    assert shards_module.shard_bytes(n_rows, layers, bert.hidden_size, "float16") == needed
    assert shards_module.shard_bytes(n_rows, layers, bert.hidden_size, "float32") == 2 * needed
    report, _ = extract_every_layer(bert, SENTENCES, tmp_path / "fits")
    assert report.shard_bytes == needed

    def forward_pass(*args, **kwargs):
        raise AssertionError("the model ran")

    usage = shards_module.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(
        shards_module.shutil, "disk_usage", lambda path: usage._replace(free=needed - 1)
    )
    monkeypatch.setattr(run_module, "_run_segment", forward_pass)
    monkeypatch.setattr(run_module, "forward_batch", forward_pass)
    # The shards' writer names the model by its "model" attribute, as the extract step sets it.
    full = tmp_path / "full"
    paths = {layer: full / f"layer{layer}.h5" for layer in range(layers)}
    attributes = {"index_checksum": "i", "model": bert.spec.name}
    with pytest.raises(StorageError, match="model tiny-bert: the shards need .* GB free"):
        extract_into_shards(bert, units, tuple(range(layers)), paths, attributes)
    assert not list(full.iterdir())


def test_a_rerun_after_a_crash_starts_clean(bert, tmp_path):
    """A killed run leaves only hidden partial files; the next run removes them."""
    directory = tmp_path / "shards"
    directory.mkdir()
    stale = directory / ".layer0.h5.partial-99999-0"
    stale.write_bytes(b"half a shard")
    extract_every_layer(bert, SENTENCES, directory)
    assert not stale.exists()
    assert sorted(path.name for path in directory.iterdir()) == [
        f"layer{layer}.h5" for layer in range(bert.n_layers + 1)
    ]


def test_a_shard_from_other_settings_is_refused(tmp_path):
    from contextuality.errors import ShardMismatchError

    path = tmp_path / "layer0.h5"
    attributes = {"index_checksum": "i", "pooling": "mean", "config_hash": "aaaa"}
    with ShardSetWriter({0: path}, 2, 3, "float16", attributes) as writer:
        writer.write(0, np.ones((1, 2, 3), dtype=np.float16))
        writer.commit({})
    vectors, _ = load_shard(path, "i", 2, expected={"pooling": "mean", "config_hash": "aaaa"})
    assert vectors.shape == (2, 3)
    with pytest.raises(ShardMismatchError, match="pooling = 'mean'.*'first'"):
        load_shard(path, "i", 2, expected={"pooling": "first"})
    with pytest.raises(ShardMismatchError, match="config_hash"):
        load_shard(path, "i", 2, expected={"config_hash": "bbbb"})
