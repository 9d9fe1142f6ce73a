"""A streamed layer summed in parts and merged (`streaming.merge`) against one job: the
same state file, dataset for dataset and bit for bit, the samples included, whatever
rows each part holds (all, none); a model streamed in parts on a corpus under one segment;
parts of another extraction, a part missing or twice refused in one line. And the exact sums
under them (`streaming.exact`): the same bits whatever the grouping of their terms."""

from __future__ import annotations

import math
from fractions import Fraction

import h5py
import numpy as np
import pytest
import torch

from contextuality.corpus.index import IndexSettings, build_occurrence_index
from contextuality.errors import ShardMismatchError
from contextuality.files.provenance import read_json
from contextuality.streaming.accumulate import StreamingAccumulator
from contextuality.streaming.exact import ExactSum
from contextuality.streaming.merge import merge_parts
from contextuality.streaming.state import StreamingSettings, load_state

SETTINGS = StreamingSettings(
    word_sample_size=4, seed=5, baseline_sample_size=50, sample_replicates=3
)
DIM = 6


@pytest.fixture(scope="module")
def corpus():
    """An occurrence index of 240 random sentences, float16 vectors of 3 layers for it
    (some rows without a vector), and 8 segments ending at sentence boundaries."""
    rng = np.random.default_rng(21)
    vocabulary = [f"w{i}" for i in range(40)] + ["the", "of"]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    units = [
        list(rng.choice(vocabulary, size=rng.integers(1, 10), p=weights / weights.sum()))
        for _ in range(240)
    ]
    index = build_occurrence_index(units, IndexSettings(min_contexts=3))
    vectors = (rng.normal(size=(3, len(index.occurrences), DIM)) + 0.5).astype(np.float16)
    vectors[:, 17] = np.nan
    sentence_id = index.occurrences["sentence_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, sentence_id[1:] != sentence_id[:-1]])
    cuts = [0, *starts[np.linspace(0, len(starts), 9).astype(int)[1:-1]].tolist(), len(sentence_id)]
    return index, vectors, list(zip(cuts[:-1], cuts[1:], strict=True))


def _accumulate(directory, index, vectors, segments, rows=None, part=None, model="m"):
    """Sum `segments` (of the index's rows) into state files under `directory`; `rows`
    and `part` (K, N) make it part K of N, recording what the stream step records."""
    occurrences = index.occurrences
    paths = {layer: directory / f"layer_{layer}.state.h5" for layer in range(len(vectors))}
    attributes = {"model": model, "index_checksum": "i"}
    if part is not None:
        attributes |= {"part": part[0], "n_parts": part[1], "first_row": rows[0]}
        attributes |= {"n_rows_total": len(occurrences)}
    with StreamingAccumulator(
        paths,
        occurrences["word_id"].to_numpy(),
        occurrences["sentence_id"].to_numpy(),
        DIM,
        attributes,
        SETTINGS,
        indexed=index.vocab["indexed"].to_numpy(),
        rows=rows,
    ) as accumulator:
        offset = 0 if rows is None else rows[0]
        for start, end in segments:
            accumulator.write(start - offset, vectors[:, start:end])
        accumulator.commit({"n_missing": 0})
    return paths


def _parts(tmp_path, index, vectors, segments, groups):
    """One state file set per group of consecutive segments (a part; an empty group a
    part of no rows), in order."""
    found, row = [], 0
    for number, group in enumerate(groups):
        chosen = [segments[k] for k in group]
        rows = (chosen[0][0], chosen[-1][1]) if chosen else (row, row)
        row = rows[1]
        directory = tmp_path / f"part_{number}-of-{len(groups)}"
        found.append(_accumulate(directory, index, vectors, chosen, rows, (number, len(groups))))
    return found


def _datasets(path) -> dict[str, np.ndarray]:
    with h5py.File(path) as handle:
        return {name: handle[name][()] for name in handle}


def _assert_states_agree(found: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    """Two state files' datasets (`_datasets`) of the same index: the same words, counts and
    sampled rows; the sums and sampled vectors within the rounding of rows one float16 step
    apart (a streamed model in parts against one job, a cut regrouping batches)."""
    assert found.keys() == expected.keys()
    for name, values in expected.items():
        if values.dtype.kind in "iub":
            np.testing.assert_array_equal(found[name], values, err_msg=name)
        else:
            np.testing.assert_allclose(found[name], values, rtol=1e-3, atol=1e-3, err_msg=name)


EVERY_SEGMENT = list(range(8))


@pytest.mark.parametrize(
    "groups",
    [
        [[0, 1, 2], [3], [4, 5, 6, 7]],
        [[0], [1, 2, 3, 4, 5, 6, 7]],
        [EVERY_SEGMENT, []],  # a part of every row, and one of none
        [[], EVERY_SEGMENT, []],
    ],
)
def test_parts_merged_are_the_one_job_bit_for_bit(tmp_path, corpus, groups):
    index, vectors, segments = corpus
    whole = _accumulate(tmp_path / "whole", index, vectors, segments)
    parts = _parts(tmp_path, index, vectors, segments, groups)
    merged = {layer: tmp_path / "merged" / f"layer_{layer}.state.h5" for layer in whole}
    merge_parts({layer: [part[layer] for part in parts] for layer in whole}, merged)
    for layer, path in whole.items():
        expected, found = _datasets(path), _datasets(merged[layer])
        assert found.keys() == expected.keys()
        for name, values in expected.items():
            assert values.dtype == found[name].dtype
            assert values.tobytes() == found[name].tobytes(), (layer, name)
        one, other = load_state(path, "i", len(vectors[0])), load_state(merged[layer], "i")
        ignored = {"created_utc"}
        assert {k: v for k, v in one.attributes.items() if k not in ignored} == {
            k: v for k, v in other.attributes.items() if k not in ignored
        }
    # a part's own files hold only its rows' samples, and the limbs the merge adds
    part_rows = [load_state(part[0], "i").kept_rows for part in parts]
    assert np.array_equal(np.concatenate(part_rows), load_state(whole[0], "i").kept_rows)
    assert all("words_hi" in _datasets(part[0]) for part in parts)
    assert "words_hi" not in _datasets(whole[0])


def test_a_part_missing_twice_or_of_another_extraction_is_refused(tmp_path, corpus):
    index, vectors, segments = corpus
    parts = _parts(tmp_path, index, vectors, segments, [[0, 1], [2, 3, 4], [5, 6, 7]])

    def merge(chosen, name):
        outputs = {layer: tmp_path / name / f"layer_{layer}.state.h5" for layer in range(3)}
        merge_parts({layer: [part[layer] for part in chosen] for layer in range(3)}, outputs)
        return outputs

    cases = {
        "missing": ([parts[0], parts[2]], r"\[0, 2\], not 0 to 2 .*part 1 missing"),
        "twice": ([parts[0], parts[1], parts[1]], r"\[0, 1, 1\].*part 1 twice"),
        "order": ([parts[1], parts[0], parts[2]], r"\[1, 0, 2\], not 0 to 2 once each in order"),
    }
    for name, (chosen, message) in cases.items():
        with pytest.raises(ShardMismatchError, match=message) as caught:
            merge(chosen, name)
        assert "\n" not in str(caught.value)
        assert not (tmp_path / name).exists() or not list((tmp_path / name).iterdir())
    rows = (segments[2][0], segments[4][1])
    other = _accumulate(tmp_path / "other", index, vectors, segments[2:5], rows, (1, 3), "m2")
    with pytest.raises(ShardMismatchError, match="a part of another extraction .*model differs"):
        merge([parts[0], other, parts[2]], "other-model")


@pytest.fixture(scope="module")
def tiny_bert(tiny_bert_dir):
    from contextuality.backends import load_model
    from contextuality.backends.settings import ModelSettings

    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


def _model_parts(loaded, units, index, directory, n_parts):
    """Each part of `n_parts` of the extraction of layers 0 and 2 of `units`, streamed into
    state files and stored into shards under `directory`: (plans, state paths, shard paths)."""
    from contextuality.extraction.partitions import plan_extraction

    from extraction import extract_into, extract_into_shards

    layers = (0, 2)
    occurrences = index.occurrences
    plans, states, shards = [], [], []
    for part in range(n_parts):
        plan = plan_extraction(loaded, units.counts, layers, part, n_parts)
        attributes = {"model": "tiny-bert", "index_checksum": "i", **plan.part_attributes()}
        place = directory / f"part_{part}-of-{n_parts}"
        state = {layer: place / f"layer_{layer}.state.h5" for layer in layers}
        shard = {layer: place / f"layer_{layer}.h5" for layer in layers}
        accumulator = StreamingAccumulator(
            state,
            occurrences["word_id"].to_numpy(),
            occurrences["sentence_id"].to_numpy(),
            loaded.hidden_size,
            attributes,
            SETTINGS,
            indexed=index.vocab["indexed"].to_numpy(),
            rows=(plan.first_row, plan.first_row + plan.n_rows) if plan.partitioned else None,
        )
        extract_into(loaded, units, layers, accumulator, part, n_parts)
        extract_into_shards(loaded, units, layers, shard, attributes, part=part, n_parts=n_parts)
        plans.append(plan)
        states.append(state)
        shards.append(shard)
    return plans, states, shards


def _merged_and_one_job_of_rows(loaded, index, plans, states, shards, directory):
    """The parts' state files merged, and the state one job writes summing the parts'
    stored rows segment by segment as the parts ran them: (merged paths, one job's paths,
    each layer's rows as stored)."""
    from contextuality.storage.shards import load_shard_parts

    occurrences = index.occurrences
    n_rows = len(occurrences)
    layers = list(states[0])
    merged = {layer: directory / "merged" / f"layer_{layer}.state.h5" for layer in layers}
    merge_parts({layer: [part[layer] for part in states] for layer in layers}, merged)
    rows = {
        layer: load_shard_parts([part[layer] for part in shards], "i", n_rows, dtype=None)[0]
        for layer in layers
    }
    of_rows = {layer: directory / "of_rows" / f"layer_{layer}.state.h5" for layer in layers}
    with StreamingAccumulator(
        of_rows,
        occurrences["word_id"].to_numpy(),
        occurrences["sentence_id"].to_numpy(),
        loaded.hidden_size,
        {"model": "tiny-bert", "index_checksum": "i"},
        SETTINGS,
        indexed=index.vocab["indexed"].to_numpy(),
    ) as accumulator:
        stacked = np.stack([rows[layer] for layer in layers])
        for plan in plans:
            for start, end in plan.segments:
                first, last = plan.row_offsets[start], plan.row_offsets[end]
                accumulator.write(int(first), stacked[:, first:last])
        accumulator.commit({"n_missing": 0})
    return merged, of_rows, rows


@pytest.mark.parametrize(("segment_words", "n_parts"), [(None, 2), (None, 3), (24, 3)])
def test_a_streamed_model_in_parts_holds_rows_in_every_part_and_merges(
    tiny_bert, tmp_path, segment_words, n_parts
):
    """A tiny BERT streamed in parts, on a corpus under one segment (the default size) and
    on one of several: every part holds rows; the merged state is the one job's state of
    the parts' rows, bit for bit; those rows are the whole extraction's, within one float16
    step where a cut regroups a segment's batches, so the merged sums are the one job's
    within that rounding and its samples the same rows."""
    from test_extraction_partitions import assert_rows_agree, regrouped_rows
    from test_streaming import MODEL_SENTENCES

    from contextuality.corpus.words import split_words
    from contextuality.extraction.partitions import segments
    from contextuality.extraction.units import sentence_units
    from contextuality.storage.shards import load_shard

    from extraction import with_spec

    sentences = [f"{sentence} Case {k}." for k in range(3) for sentence in MODEL_SENTENCES]
    index = build_occurrence_index(
        [split_words(sentence) for sentence in sentences], IndexSettings(min_contexts=2)
    )
    loaded = with_spec(tiny_bert, segment_words=segment_words)  # None: the default
    units = sentence_units(loaded, sentences)
    n_rows = len(index.occurrences)
    _, whole_states, whole_shards = _model_parts(loaded, units, index, tmp_path, 1)
    plans, states, shards = _model_parts(loaded, units, index, tmp_path, n_parts)
    n_segments = len(segments(units.counts, plans[0].segment_words))
    assert n_segments == 1 if segment_words is None else n_segments > n_parts
    assert all(plan.n_rows > 0 for plan in plans)  # every part holds rows
    assert sum(plan.n_rows for plan in plans) == n_rows

    merged, of_rows, rows = _merged_and_one_job_of_rows(
        loaded, index, plans, states, shards, tmp_path
    )
    occurrences = index.occurrences
    regrouped = regrouped_rows(units.counts, n_parts, plans[0].segment_words)
    for layer in merged:
        expected, found = _datasets(of_rows[layer]), _datasets(merged[layer])
        assert found.keys() == expected.keys()
        assert all(expected[name].tobytes() == found[name].tobytes() for name in expected)
        # the parts' rows against the whole extraction's, and the merged state against its
        whole = load_shard(whole_shards[0][layer], "i", n_rows)[0]
        assert_rows_agree(rows[layer].astype(np.float32), whole, regrouped)
        one_job = _datasets(whole_states[0][layer])
        for name in ("word_id", "kept_rows", "in_word_sample", "word_n", "sentence_n"):
            np.testing.assert_array_equal(found[name], one_job[name])
        # each word's sum moves by at most its rows' differences
        moved = np.nan_to_num(np.abs(rows[layer].astype(np.float64) - whole))
        word_id = occurrences["word_id"].to_numpy()
        tracked = np.isin(word_id, found["word_id"])
        bound = np.zeros_like(found["word_vector_sum"])
        np.add.at(bound, np.searchsorted(found["word_id"], word_id[tracked]), moved[tracked])
        difference = np.abs(found["word_vector_sum"] - one_job["word_vector_sum"])
        assert (difference <= bound + 1e-9).all()
        kept = found["kept_rows"]
        assert_rows_agree(found["kept_vectors"], one_job["kept_vectors"], regrouped[kept])


def test_streamed_parts_of_no_rows_write_empty_sums_that_merge_as_nothing(tiny_bert, tmp_path):
    """More parts than sentences (refused at the dry run where the corpus's size is known):
    the parts left without rows write empty sums with their limbs, and the merge is the
    state one job writes of the parts' rows, bit for bit."""
    from test_streaming import MODEL_SENTENCES

    from contextuality.corpus.words import split_words
    from contextuality.extraction.units import sentence_units

    sentences = MODEL_SENTENCES[:2]
    index = build_occurrence_index(
        [split_words(sentence) for sentence in sentences], IndexSettings(min_contexts=1)
    )
    units = sentence_units(tiny_bert, sentences)
    plans, states, shards = _model_parts(tiny_bert, units, index, tmp_path, 4)
    assert [plan.n_rows > 0 for plan in plans] == [True, False, True, False]
    for plan, part in zip(plans, states, strict=True):
        if not plan.n_rows:
            empty = _datasets(part[2])
            assert len(empty["kept_rows"]) == 0 and not empty["word_n"].any()
            assert not empty["words_hi"].any() and not empty["words_lo"].any()
    merged, of_rows, _ = _merged_and_one_job_of_rows(
        tiny_bert, index, plans, states, shards, tmp_path
    )
    for layer, path in merged.items():
        expected, found = _datasets(of_rows[layer]), _datasets(path)
        assert found.keys() == expected.keys()
        assert all(expected[name].tobytes() == found[name].tobytes() for name in expected)


def test_exact_sums_are_the_same_bits_whatever_the_grouping():
    rng = np.random.default_rng(0)
    terms = torch.as_tensor(rng.normal(scale=10.0 ** rng.uniform(-6, 6, (300, 1)), size=(300, 5)))
    one = ExactSum((5,), "cpu")
    for row in terms:
        one.add(row)
    halves = [ExactSum((5,), "cpu"), ExactSum((5,), "cpu")]
    for position, row in enumerate(terms):
        halves[position >= 117].add(row)
    halves[0].merge(halves[1])
    assert one.value().numpy().tobytes() == halves[0].value().numpy().tobytes()
    exact = np.array([float(sum(map(_fraction, column))) for column in terms.numpy().T])
    np.testing.assert_array_equal(one.value().numpy(), exact)  # the sum rounded once
    rows = ExactSum((4, 5), "cpu")
    rows.add(terms[:2], torch.tensor([3, 1]))
    assert rows.value()[[3, 1]].numpy().tobytes() == terms[:2].numpy().tobytes()
    with pytest.raises(OverflowError, match="2\\^43"):
        ExactSum((1,), "cpu").add(torch.tensor([2.0**44]))


def _fraction(value: float) -> Fraction:
    """`value` truncated to a multiple of 2^-70, exactly."""
    return Fraction(math.floor(Fraction(value) * 2**70), 2**70)


@pytest.mark.workflow
def test_a_streamed_model_in_parts_is_the_one_job_in_the_workflow(tmp_path, tiny_bert_dir):
    """``extraction.partitions: 3`` with a streamed model on a corpus under one segment
    (the default size): three stream jobs, each holding rows, and a merge job write the
    state files one job writes, within the rounding of the batches the cuts regroup, and
    the same tables; the merged meta.json counts every part's rows."""
    from test_extraction_partitions import _assert_tables_agree
    from test_workflow import _config, _write_corpus
    from workflow_runs import snakemake, write_config

    from contextuality.files.tables import read_tsv

    runs = {}
    for parts in (1, 3):
        directory = tmp_path / f"parts-{parts}"
        directory.mkdir()
        corpus = directory / "corpus.txt"
        _write_corpus(corpus)
        model = {"source": str(tiny_bert_dir), "layers": [0, 2]}
        config = _config(corpus, {"streamed": {**model, "streaming": True}})
        config["measures"]["transforms"] = ["none"]
        config["extraction"] = {"partitions": parts}
        write_config(directory, config)
        result = snakemake(directory, "all")
        assert result.returncode == 0, result.stderr[-3000:]
        runs[parts] = directory
    state = "results/streaming/streamed/layer_2.state.h5"
    assert (runs[3] / "results/streaming/streamed/part_2-of-3/layer_2.state.h5").is_file()
    _assert_states_agree(_datasets(runs[3] / state), _datasets(runs[1] / state))
    for part in range(3):
        path = runs[3] / f"results/streaming/streamed/part_{part}-of-3/layer_2.state.h5"
        with h5py.File(path) as handle:
            assert handle.attrs["part_rows"] > 0  # every part holds rows
    tables = [read_tsv(run / "results/tables/measures.tsv") for run in runs.values()]
    _assert_tables_agree(tables[1], tables[0])
    metas = [read_json(run / "results/streaming/streamed/meta.json") for run in runs.values()]
    assert metas[1]["merged_parts"] == 3 and "part" not in metas[1]
    for key in ("n_occurrences", "n_sentences", "n_subword_tokens"):
        assert metas[0][key] == metas[1][key]


def _assert_measures_agree(found: dict, expected: dict) -> None:
    """A summary's measures (nested records): the same keys and text, each number within
    10⁻⁴ (relative) of the expected one."""
    assert found.keys() == expected.keys()
    for name, value in expected.items():
        if isinstance(value, dict):
            _assert_measures_agree(found[name], value)
        elif isinstance(value, float):
            assert found[name] == pytest.approx(value, rel=1e-4, nan_ok=True), name
        else:
            assert found[name] == value, name


def test_stream_in_parts_and_merge_commands(tiny_bert_dir, tmp_path, capsys):
    """'stream --partitions 2 --part K' twice, then 'merge-stream': the one 'stream' job's state
    files, dataset for dataset (within the rounding of the batches the cut regroups), and
    its measures; a part missing is one line."""
    from test_streaming import MODEL_SENTENCES

    from contextuality.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(MODEL_SENTENCES * 3) + "\n")
    sentences, index = tmp_path / "sentences.parquet", tmp_path / "index"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    assert main(["index", str(sentences), "-o", str(index), "--min-contexts", "2"]) == 0
    model = [str(tiny_bert_dir), "--sentences", str(sentences), "--index", str(index)]
    stream = ["stream", *model, "--layers", "0,2", "--device", "cpu", "--segment-words", "20"]
    assert main([*stream, "-o", str(tmp_path / "whole")]) == 0
    for part in (0, 1):
        out = tmp_path / f"part{part}"
        assert main([*stream, "--partitions", "2", "--part", str(part), "-o", str(out)]) == 0
        assert not (out / "layer_2.json").exists()  # measured once merged
    merged = tmp_path / "merged"
    parts = [str(tmp_path / "part0"), str(tmp_path / "part1")]
    assert main(["merge-stream", *parts, "--index", str(index), "-o", str(merged)]) == 0
    for layer in (0, 2):
        expected = _datasets(tmp_path / "whole" / f"layer_{layer}.state.h5")
        _assert_states_agree(_datasets(merged / f"layer_{layer}.state.h5"), expected)
        one = read_json(tmp_path / "whole" / f"layer_{layer}.json")["measures"]
        other = read_json(merged / f"layer_{layer}.json")["measures"]
        _assert_measures_agree(other, one)
    assert read_json(merged / "meta.json")["merged_parts"] == 2
    capsys.readouterr()
    code = main(["merge-stream", parts[1], "--index", str(index), "-o", str(tmp_path / "bad")])
    error = capsys.readouterr().err.strip()
    assert code != 0 and "part 0 missing" in error and "\n" not in error
