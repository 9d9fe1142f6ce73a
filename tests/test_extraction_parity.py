"""Tests of the parity check (contextuality.extraction.parity): a seeded sample of an
extraction's sentences run alone, compared layer by layer with their padded batches.

A planted batching error (GPT-2 padded on the left, BERT attending to its padding) must
be refused before any shard is put in place, the shards already there left byte for byte;
the correct code must pass with float32 differences at rounding level, recorded in every
shard's attributes, the state files of a streamed model and meta.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from contextuality import backends
from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.errors import BatchParityError, ConfigError
from contextuality.extraction import forward
from contextuality.extraction.parity import PARITY_TOLERANCE, merged_parity, parity_sentences
from contextuality.extraction.partitions import plan_extraction
from contextuality.extraction.run import run_extraction
from contextuality.extraction.units import sentence_units
from contextuality.storage.shards import ShardSetWriter, shard_attributes

from extraction import corpus_and_index, with_spec

# Lengths from one word to twenty, so that every batch pads most of its inputs.
SENTENCES = [
    "The cat sat on the mat.",
    "Bushfires",
    "A dog ran in the park, and the cat watched the quick brown fox jump over it.",
    "Is it true that 1,650 people voted?",
    "Residents left.",
    "The bank raised interest rates; the river bank flooded over the lazy dog!",
    "Hundreds of residents were forced to leave their homes.",
    "The fox jumps.",
    "A cat, a dog and a fox ran in the park on the mat.",
    "Voted?",
    "The quick brown fox jumps over the lazy dog in the park.",
    "Rates rose.",
]
CORPUS_LINES = SENTENCES[:6]


@pytest.fixture(scope="module")
def bert(tiny_bert_dir):
    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_dir):
    return load_model(ModelSettings(name="tiny-gpt2", source=str(tiny_gpt2_dir)))


def _left_padded(batch, pad_id):
    """`forward.pad_batch` with its padding moved before each input (GPT-2's wrong side:
    positions shift, and the pooling reads the padding's states)."""
    input_ids, attention = PAD_BATCH(batch, pad_id)
    for row, length in enumerate(attention.sum(axis=1)):
        input_ids[row] = np.roll(input_ids[row], input_ids.shape[1] - length, axis=0)
        attention[row] = np.roll(attention[row], input_ids.shape[1] - length)
    return input_ids, attention


def _attending_to_padding(batch, pad_id):
    """`forward.pad_batch` with an attention mask of ones: every input attends to its
    padding."""
    input_ids, attention = PAD_BATCH(batch, pad_id)
    return input_ids, np.ones_like(attention)


PAD_BATCH = forward.pad_batch


def _paths(directory: Path, layers) -> dict[int, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return {layer: directory / f"layer{layer}.h5" for layer in layers}


def _extract(loaded, directory: Path, seed: int = 0, sentences=SENTENCES, **spec_changes):
    """Every layer of `loaded` for `sentences` into shards in `directory`, the parity
    check's sample drawn from `seed`; returns the report and the shard paths."""
    loaded = with_spec(loaded, **spec_changes)
    layers = tuple(range(loaded.n_layers + 1))
    units = sentence_units(loaded, sentences)
    plan = plan_extraction(loaded, units.counts, layers)
    paths = _paths(directory, layers)
    sink = ShardSetWriter(
        paths,
        plan.n_rows,
        loaded.hidden_size,
        "float16",
        {"index_checksum": "i", "dtype": "float16"},
    )
    return run_extraction(loaded, units, plan, sink, progress=False, seed=seed), paths


# --------------------------------------------------------------------------------------
# the sample
# --------------------------------------------------------------------------------------


def test_the_sample_is_the_seeds_own_and_holds_only_sentences_with_rows():
    """The same seed draws the same sentences, another seed others; never one of no rows
    or outside the job's range; as many as asked for, or all there are."""
    counts = np.array([3, 0, 2, 5, 0, 1, 4, 2, 0, 3, 1, 1, 2, 2, 6, 0, 1, 3, 2, 1])
    offsets = np.concatenate([[0], np.cumsum(counts)])
    first = parity_sentences(offsets, 2, 18, 5, seed=0)
    assert np.array_equal(first, parity_sentences(offsets, 2, 18, 5, seed=0))
    assert not np.array_equal(first, parity_sentences(offsets, 2, 18, 5, seed=1))
    for seed in range(20):
        chosen = parity_sentences(offsets, 2, 18, 5, seed)
        assert len(chosen) == len(set(chosen)) == 5
        assert np.all((chosen >= 2) & (chosen < 18)) and np.all(counts[chosen] > 0)
        assert np.array_equal(chosen, np.sort(chosen))
    with_rows = np.flatnonzero(counts[2:18] > 0) + 2
    assert np.array_equal(parity_sentences(offsets, 2, 18, 100, seed=3), with_rows)
    assert len(parity_sentences(offsets, 2, 18, 0, seed=3)) == 0


def test_an_extraction_records_the_sample_its_seed_draws(gpt2, tmp_path):
    """The sentences an extraction runs alone are `parity_sentences` of its seed: the
    same for the same seed, others for another; each sentence is one input here."""
    units = sentence_units(gpt2, SENTENCES)
    offsets = np.concatenate([[0], np.cumsum(units.counts)])
    records = {}
    for seed in (0, 0, 7):
        report, _ = _extract(gpt2, tmp_path / f"s{seed}", seed=seed, parity_sentences=4)
        records.setdefault(seed, []).append(report.parity)
        expected = parity_sentences(offsets, 0, len(SENTENCES), 4, seed).tolist()
        assert report.parity["sentences"] == expected and report.parity["seed"] == seed
        assert report.parity["inputs"] == 4
        assert report.parity["rows"] == int(units.counts[expected].sum())
    assert records[0][0]["sentences"] == records[0][1]["sentences"]
    assert records[0][0]["sentences"] != records[7][0]["sentences"]


# --------------------------------------------------------------------------------------
# the correct code passes, and the check is recorded
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_batches_equal_their_inputs_alone_and_every_shard_records_it(model, request, tmp_path):
    """On the correct code every layer's batched rows equal the rows alone to float32
    rounding (far inside the tolerance), and each shard records the check."""
    loaded = request.getfixturevalue(model)
    report, paths = _extract(loaded, tmp_path)
    record = report.parity
    assert record["checked"] is True and record["precision"] == "float32"
    assert record["inputs"] == len(SENTENCES) and record["tolerance"] == PARITY_TOLERANCE["float32"]
    assert set(record["max_abs_difference"]) == {str(layer) for layer in paths}
    relative = np.array(list(record["max_relative_difference"].values()))
    assert np.all(relative <= 1e-5)
    assert np.all(np.array(list(record["max_abs_difference"].values())) >= 0)
    for path in paths.values():
        assert shard_attributes(path)["parity"] == json.loads(json.dumps(record))


@pytest.mark.parametrize("count", [-1, 2.5, "32", True])
def test_a_sample_that_is_not_a_count_is_refused_in_one_line(gpt2, tmp_path, count):
    """A ``parity_sentences`` that is not a count (a spec built in Python, past the
    schema) is one line naming the key and the value, and no file is left behind."""
    with pytest.raises(ConfigError) as refused:
        _extract(gpt2, tmp_path / "shards", parity_sentences=count)
    assert str(refused.value).startswith(f"models.tiny-gpt2.parity_sentences: {count!r} ")
    assert not list((tmp_path / "shards").iterdir())


def test_no_sample_checks_nothing_and_says_so(gpt2, tmp_path, monkeypatch):
    """``parity_sentences: 0`` runs nothing alone: the record says unchecked, and a
    planted error goes through (what the check exists to catch)."""
    monkeypatch.setattr(forward, "pad_batch", _left_padded)
    report, _ = _extract(gpt2, tmp_path, parity_sentences=0)
    assert report.parity["checked"] is False
    assert report.parity["inputs"] == 0 and report.parity["sentences"] == []


# --------------------------------------------------------------------------------------
# planted errors are refused before anything is put in place
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "planted"), [("gpt2", _left_padded), ("bert", _attending_to_padding)]
)
def test_a_planted_batching_error_is_refused_and_the_shards_there_stay(
    model, planted, request, tmp_path, monkeypatch
):
    """A wrong padding side (GPT-2) or attention mask (BERT) is refused in one line
    naming the model, a layer, the difference and the tolerance; the shards written
    before it keep their bytes, and no temporary file is left."""
    loaded = request.getfixturevalue(model)
    _, paths = _extract(loaded, tmp_path)
    before = {layer: path.read_bytes() for layer, path in paths.items()}
    monkeypatch.setattr(forward, "pad_batch", planted)
    with pytest.raises(BatchParityError) as refused:
        _extract(loaded, tmp_path)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"model {loaded.spec.name}: layer ")
    assert "float32 tolerance 0.0001" in message and "nothing was written" in message
    assert {layer: path.read_bytes() for layer, path in paths.items()} == before
    assert sorted(tmp_path.iterdir()) == sorted(paths.values())


def test_only_a_wrong_batch_is_refused_not_a_right_one_with_the_same_inputs(
    gpt2, tmp_path, monkeypatch
):
    """Each input alone in a batch of its own (a token budget of one token) pads nothing:
    the left padding then changes nothing and the check passes, so it is the padding it
    catches, not the planted function."""
    monkeypatch.setattr(forward, "pad_batch", _left_padded)
    report, _ = _extract(gpt2, tmp_path, token_budget=1)
    assert max(report.parity["max_relative_difference"].values()) <= 1e-6


# --------------------------------------------------------------------------------------
# the steps: meta.json, a streamed model's state files, parts merged
# --------------------------------------------------------------------------------------


@pytest.fixture
def corpus_index(tmp_path):
    """A sentence table and occurrence index built by the workflow's own steps."""
    return corpus_and_index(tmp_path, CORPUS_LINES)


def test_meta_json_records_the_check_and_a_refusal_keeps_the_study(
    tiny_gpt2_dir, corpus_index, tmp_path, monkeypatch
):
    """steps.extract writes the check into meta.json (the same record as the shards'),
    its sample drawn by the seed given; refused, the shards and meta.json already there
    keep their bytes."""
    from contextuality import steps

    sentences, index = corpus_index
    paths = _paths(tmp_path / "shards", (0, 1, 2))
    outputs = steps.LayerOutputs(files=paths, meta=tmp_path / "meta.json")
    settings = {"source": str(tiny_gpt2_dir), "device": "cpu", "parity_sentences": 3}
    meta = steps.extract(
        backends.model_settings("tiny", settings), sentences, index, outputs, progress=False, seed=5
    )
    written = json.loads(outputs.meta.read_text())
    assert written["parity"] == json.loads(json.dumps(meta["parity"]))
    assert written["parity"]["seed"] == 5 and len(written["parity"]["sentences"]) == 3
    assert all(shard_attributes(path)["parity"] == written["parity"] for path in paths.values())
    kept = {path: path.read_bytes() for path in [*paths.values(), outputs.meta]}
    monkeypatch.setattr(forward, "pad_batch", _left_padded)
    with pytest.raises(BatchParityError, match=r"^model tiny: layer \d"):
        steps.extract(
            backends.model_settings("tiny", settings),
            sentences,
            index,
            outputs,
            progress=False,
            seed=5,
        )
    assert {path: path.read_bytes() for path in kept} == kept


def test_a_streamed_model_records_the_check_in_its_state_files_and_parts_merge(
    tiny_gpt2_dir, corpus_index, tmp_path
):
    """steps.stream records the check in each state file and meta.json, drawn by the
    measures' seed; a model streamed in two parts merges their records: every sentence,
    input and row of both, each layer's largest difference."""
    from contextuality import steps
    from contextuality.files.provenance import read_json
    from contextuality.measures.settings import MeasureSettings

    sentences, index = corpus_index
    settings = {"source": str(tiny_gpt2_dir), "device": "cpu", "segment_words": 8}
    measures = MeasureSettings(seed=3)
    whole = steps.LayerOutputs(_paths(tmp_path / "whole", (0, 1, 2)), tmp_path / "whole.json")
    meta = steps.stream(
        backends.model_settings("tiny", settings), sentences, index, whole, measures, progress=False
    )
    assert meta["parity"]["checked"] and meta["parity"]["seed"] == 3
    for path in whole.files.values():
        assert shard_attributes(path)["parity"] == json.loads(json.dumps(meta["parity"]))

    parts = []
    for part in range(2):
        outputs = steps.LayerOutputs(
            _paths(tmp_path / f"part{part}", (0, 1, 2)), tmp_path / f"part{part}.json"
        )
        steps.stream(
            backends.model_settings("tiny", settings),
            sentences,
            index,
            outputs,
            measures,
            part=(part, 2),
            progress=False,
        )
        parts.append(outputs)
    records = [read_json(outputs.meta)["parity"] for outputs in parts]
    assert all(record["checked"] for record in records)
    merged = steps.LayerOutputs(_paths(tmp_path / "merged", (0, 1, 2)), tmp_path / "merged.json")
    steps.merge_stream(
        {layer: [outputs.files[layer] for outputs in parts] for layer in (0, 1, 2)},
        [outputs.meta for outputs in parts],
        merged,
    )
    record = read_json(merged.meta)["parity"]
    assert record["sentences"] == records[0]["sentences"] + records[1]["sentences"]
    assert record["inputs"] == sum(part["inputs"] for part in records)
    for layer in ("0", "1", "2"):
        worst = max(part["max_abs_difference"][layer] for part in records)
        assert record["max_abs_difference"][layer] == worst
    for path in merged.files.values():
        assert shard_attributes(path)["parity"] == record


def test_merged_records_are_the_parts_together():
    """`merged_parity` adds the parts' counts, joins their samples, keeps each layer's
    largest difference and says checked only where every part was; a part without a
    record (written before the check) leaves none."""
    part = {
        "checked": True,
        "sentences": [1, 4],
        "seed": 0,
        "inputs": 2,
        "rows": 9,
        "precision": "float32",
        "tolerance": 1e-4,
        "max_abs_difference": {"0": 1e-7, "1": 3e-7},
        "max_relative_difference": {"0": 1e-8, "1": 2e-8},
        "seconds": 0.25,
    }
    other = {
        **part,
        "checked": False,
        "sentences": [7],
        "inputs": 1,
        "rows": 3,
        "max_abs_difference": {"0": 5e-7, "1": 1e-7},
        "max_relative_difference": {"0": 4e-8, "1": 1e-8},
    }
    merged = merged_parity([part, other])
    assert merged["sentences"] == [1, 4, 7] and merged["inputs"] == 3 and merged["rows"] == 12
    assert merged["checked"] is False and merged["seconds"] == 0.5
    assert merged["max_abs_difference"] == {"0": 5e-7, "1": 3e-7}
    assert merged["max_relative_difference"] == {"0": 4e-8, "1": 2e-8}
    assert merged_parity([part, None]) is None


def test_the_extract_command_draws_its_sample_by_its_seed(tiny_bert_dir, tmp_path):
    """'extract --seed S --parity-sentences N' records N sentences drawn by S, as the
    workflow's job does from measures.seed."""
    from contextuality.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n")
    sentences, index = tmp_path / "sentences.parquet", tmp_path / "index"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    assert main(["index", str(sentences), "-o", str(index), "--min-contexts", "1"]) == 0
    model = [str(tiny_bert_dir), "--sentences", str(sentences), "--index", str(index)]
    samples = []
    for seed in (5, 6):
        out = tmp_path / f"seed{seed}"
        options = ["--device", "cpu", "--parity-sentences", "3", "--seed", str(seed)]
        assert main(["extract", *model, *options, "-o", str(out)]) == 0
        record = json.loads((out / "meta.json").read_text())["parity"]
        assert record["seed"] == seed and record["inputs"] == 3 and record["checked"]
        samples.append(record["sentences"])
    assert samples[0] != samples[1] and all(len(sample) == 3 for sample in samples)


@pytest.mark.parametrize("lstm_states", ["per_sentence", "carried"])
def test_an_elmo_in_batches_is_checked_and_one_read_in_order_is_not(
    tiny_elmo_dir, tmp_path, lstm_states
):
    """ELMo's padded batches of character ids pass the check; with carried LSTM states
    its inputs run one at a time in corpus order, so there are no batches to compare and
    the record says unchecked, with no sample."""
    spec = ModelSettings("e", str(tiny_elmo_dir), loader="elmo", lstm_states=lstm_states)
    report, _ = _extract(load_model(spec), tmp_path)
    record = report.parity
    if lstm_states == "carried":
        assert record["checked"] is False and record["sentences"] == []
        return
    assert record["checked"] is True and record["inputs"] == len(SENTENCES)
    assert max(record["max_relative_difference"].values()) <= 1e-5
