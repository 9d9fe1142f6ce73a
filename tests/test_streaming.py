"""Streaming measures (contextuality.streaming) against the shard path on the same vectors.

The reference is `analysis.measure_layer` (and `measures`, `static`) on the whole layer; the
streamed values come from an accumulator fed the same rows in several blocks of whole
sentences, then written to a state file and read back.
"""

from __future__ import annotations

import h5py
import numpy as np
import pandas as pd
import pytest

from contextuality import backends
from contextuality.corpus.index import IndexSettings, build_occurrence_index
from contextuality.corpus.settings import CorpusSettings
from contextuality.errors import ShardMismatchError
from contextuality.measures import equations, registry
from contextuality.measures.analysis import MeasureSettings, measure_layer
from contextuality.measures.static import static_vectors
from contextuality.rows import group_sizes, run_starts
from contextuality.streaming.accumulate import StreamingAccumulator, word_sample_rows
from contextuality.streaming.measure import measure_streamed_layer, static_vectors_from_state
from contextuality.streaming.state import StreamingSettings, load_state

SETTINGS = MeasureSettings(
    baseline_sample_size=200, bootstrap_resamples=50, sample_replicates=5, seed=3
)
DIM = 8


@pytest.fixture(scope="module")
def corpus():
    """An occurrence index of 300 random sentences over a Zipf-like vocabulary of 60 words
    (words repeated within sentences included), and float64 vectors for it."""
    rng = np.random.default_rng(11)
    vocabulary = [f"w{i}" for i in range(57)] + ["the", "and", "of"]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    units = [
        list(rng.choice(vocabulary, size=rng.integers(1, 12), p=weights / weights.sum()))
        for _ in range(300)
    ]
    copies = rng.integers(1, 3, size=len(units))
    index = build_occurrence_index(units, IndexSettings(min_contexts=3), copies)
    vectors = rng.normal(size=(len(index.occurrences), DIM)) + 0.7
    return index, vectors, copies


def _blocks(sentence_id: np.ndarray, n_blocks: int) -> list[tuple[int, int]]:
    """Row ranges of about equal size, each ending at a sentence boundary."""
    boundaries = np.flatnonzero(np.r_[True, sentence_id[1:] != sentence_id[:-1]])
    cuts = boundaries[np.linspace(0, len(boundaries) - 1, n_blocks + 1).astype(int)[1:-1]]
    edges = [0, *sorted(set(cuts.tolist())), len(sentence_id)]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _stream(
    tmp_path,
    index,
    layers: dict[int, np.ndarray],
    word_sample_size=10_000,
    seed=SETTINGS.seed,
    copies=None,
    n_blocks=5,
    name="state",
):
    """Feed `layers` (layer -> (N, d) vectors) through an accumulator in `n_blocks` blocks;
    returns {layer: loaded state}."""
    occurrences = index.occurrences
    sentence_id = occurrences["sentence_id"].to_numpy()
    paths = {layer: tmp_path / name / f"layer_{layer}.state.h5" for layer in layers}
    settings = StreamingSettings(
        word_sample_size=word_sample_size,
        seed=seed,
        baseline_sample_size=SETTINGS.baseline_sample_size,
        sample_replicates=SETTINGS.sample_replicates,
    )
    stacked = np.stack(list(layers.values()))
    with StreamingAccumulator(
        paths,
        occurrences["word_id"].to_numpy(),
        sentence_id,
        stacked.shape[2],
        {"model": "test", "index_checksum": "test-index"},
        settings,
        indexed=index.vocab["indexed"].to_numpy(),
        sentence_copies=copies,
        dtype=stacked.dtype.name,
    ) as accumulator:
        for start, end in _blocks(sentence_id, n_blocks):
            accumulator.write(start, stacked[:, start:end])
        accumulator.commit({"n_missing": 0})
    return {
        layer: load_state(path, "test-index", len(occurrences)) for layer, path in paths.items()
    }


def _shard_and_stream(tmp_path, index, vectors, copies, **stream):
    state = _stream(tmp_path, index, {0: vectors}, copies=copies, **stream)[0]
    expected = measure_layer(vectors, index.occurrences, index.vocab, SETTINGS, copies)
    streamed = measure_streamed_layer(state, index.occurrences, index.vocab, SETTINGS)
    return expected, streamed, state


def _compare_summaries(expected, streamed, rtol):
    for name, values in streamed.summary["measures"].items():
        for key, value in values.items():
            reference = expected.summary["measures"][name][key]
            if isinstance(value, str):
                assert value == reference, (name, key)
            else:
                np.testing.assert_allclose(value, reference, rtol=rtol, atol=1e-12, err_msg=name)


def test_streamed_measures_equal_the_shard_path(tmp_path, corpus):
    index, vectors, copies = corpus
    expected, streamed, _ = _shard_and_stream(tmp_path, index, vectors, copies)
    # per word: every streamed column, words in the same order
    words = streamed.words
    assert len(words) > 20
    columns = [c for c in words.columns if c != "n_sampled"]
    assert set(columns) <= set(expected.words.columns)
    assert not {"selfsim_paper", "mev_truncated_svd"} & set(words.columns)
    # the sample is kept in the rows' own dtype (float64 here): every column, MEV included,
    # to float64 rounding
    pd.testing.assert_frame_equal(
        words[columns], expected.words[columns], check_exact=False, rtol=1e-10, atol=1e-12
    )
    assert (words["n_sampled"] == words["n"]).all()
    # per sentence and every summary value, intervals included
    pd.testing.assert_frame_equal(
        streamed.sentences, expected.sentences, check_exact=False, rtol=1e-10
    )
    _compare_summaries(expected, streamed, rtol=1e-6)
    assert set(streamed.summary["measures"]) == set(expected.summary["measures"]) - set(
        registry.not_streamed()
    )
    assert streamed.summary["streaming"]["not_streamed"] == registry.not_streamed()
    for key in ("n_occurrences", "n_missing", "seed", "baseline_sample_size"):
        assert streamed.summary[key] == expected.summary[key]


def test_streamed_sums_equal_measures_functions(tmp_path, corpus):
    """selfsim, IntraSim and the anisotropy baseline against `measures` directly."""
    index, vectors, _ = corpus
    state = _stream(tmp_path, index, {0: vectors}, n_blocks=7)[0]
    streamed = measure_streamed_layer(state, index.occurrences, index.vocab, SETTINGS)
    occurrences = index.occurrences
    word_id = occurrences["word_id"].to_numpy()
    sentence_id = occurrences["sentence_id"].to_numpy()
    sentence_starts = run_starts(sentence_id)
    np.testing.assert_allclose(
        streamed.summary["measures"]["anisotropy"]["raw"],
        equations.anisotropy_baseline(vectors, sentence_starts),
        rtol=1e-10,
    )
    intrasim = equations.intra_similarity(vectors, sentence_starts)
    multi = group_sizes(sentence_starts, len(vectors)) >= 2
    np.testing.assert_allclose(streamed.sentences["intrasim"], intrasim[multi], rtol=1e-10)
    indexed = index.vocab["indexed"].to_numpy()[word_id]
    order = np.flatnonzero(indexed)
    order = order[np.lexsort((sentence_id[order], word_id[order]))]
    word_starts = run_starts(word_id[order])
    context_starts = run_starts(word_id[order], sentence_id[order])
    selfsim = equations.self_similarity(vectors[order], word_starts, context_starts)
    np.testing.assert_allclose(streamed.words["selfsim"], selfsim, rtol=1e-10)


def test_float16_blocks_equal_the_shard_path_on_the_stored_values(tmp_path, corpus):
    """As extraction feeds them: float16 blocks, the shard path reading float16 as float32."""
    index, vectors, copies = corpus
    stored = vectors.astype(np.float16)
    expected, streamed, _ = _shard_and_stream(
        tmp_path, index, stored.astype(np.float32), copies, n_blocks=3
    )
    state = _stream(tmp_path, index, {0: stored}, copies=copies, name="f16")[0]
    # kept as stored, in half the bytes of float32, and read back as float32 exactly
    with h5py.File(tmp_path / "f16" / "layer_0.state.h5") as handle:
        assert handle["kept_vectors"].dtype == np.float16
    assert state.kept_vectors.dtype == np.float32
    np.testing.assert_array_equal(state.kept_vectors, stored[state.kept_rows])
    from_float16 = measure_streamed_layer(state, index.occurrences, index.vocab, SETTINGS)
    for result in (streamed, from_float16):
        columns = ["selfsim", "mev", "mev_centered"]
        np.testing.assert_allclose(result.words[columns], expected.words[columns], rtol=1e-10)
        _compare_summaries(expected, result, rtol=1e-10)


def test_a_small_word_sample_changes_mev_of_frequent_words_only(tmp_path, corpus):
    index, vectors, copies = corpus
    k = 6
    expected, streamed, _ = _shard_and_stream(tmp_path, index, vectors, copies, word_sample_size=k)
    words, reference = streamed.words, expected.words
    assert (words["n_sampled"] == np.minimum(words["n"], k)).all()
    whole = (words["n"] <= k).to_numpy()
    assert whole.any() and (~whole).any()
    for column in ("mev", "mev_centered"):
        np.testing.assert_allclose(words.loc[whole, column], reference.loc[whole, column])
        assert not np.allclose(words.loc[~whole, column], reference.loc[~whole, column])
        assert words[column].between(0, 1).all()
    # MEV of k unit-ish rows is at least 1/k; exact measures are unchanged by the sample
    assert (words.loc[~whole, "mev"] >= 1 / k).all()
    np.testing.assert_allclose(words["selfsim"], reference["selfsim"], rtol=1e-10)
    summary = streamed.summary["measures"]
    np.testing.assert_allclose(
        summary["selfsim"]["raw"], expected.summary["measures"]["selfsim"]["raw"]
    )
    assert summary["mev"]["raw"] != pytest.approx(expected.summary["measures"]["mev"]["raw"])
    # the baseline's samples do not depend on the words' sample
    reference = expected.summary["measures"]["mev"]["baseline"]
    assert summary["mev"]["baseline"] == pytest.approx(reference, rel=1e-6)


def test_word_sample_is_seeded_uniform_and_bounded(corpus):
    index, _, _ = corpus
    word_id = index.occurrences["word_id"].to_numpy()
    tracked = index.vocab["indexed"].to_numpy()
    counts = np.bincount(word_id, minlength=len(tracked))
    rows = word_sample_rows(word_id, tracked, 5, seed=1)
    assert np.all(np.diff(rows) > 0)
    sampled = np.bincount(word_id[rows], minlength=len(tracked))
    np.testing.assert_array_equal(sampled, np.where(tracked, np.minimum(counts, 5), 0))
    np.testing.assert_array_equal(rows, word_sample_rows(word_id, tracked, 5, seed=1))
    assert not np.array_equal(rows, word_sample_rows(word_id, tracked, 5, seed=2))
    # a word's sample does not depend on which other words are tracked
    alone = np.zeros_like(tracked)
    frequent = int(np.argmax(counts))
    alone[frequent] = True
    np.testing.assert_array_equal(
        word_sample_rows(word_id, alone, 5, seed=1), rows[word_id[rows] == frequent]
    )
    # uniform: over seeds, every occurrence of the most frequent word is drawn about 5/n
    hits = np.zeros(len(word_id))
    for seed in range(400):
        np.add.at(hits, word_sample_rows(word_id, alone, 5, seed), 1)
    share = hits[word_id == frequent] / 400
    assert abs(share.mean() - 5 / counts[frequent]) < 1e-12
    assert np.all(np.abs(share - 5 / counts[frequent]) < 0.1)


def test_the_state_is_deterministic_for_a_seed(tmp_path, corpus):
    index, vectors, _ = corpus
    first = _stream(tmp_path, index, {0: vectors}, word_sample_size=4, seed=5, name="a")[0]
    again = _stream(tmp_path, index, {0: vectors}, word_sample_size=4, seed=5, name="b")[0]
    other = _stream(tmp_path, index, {0: vectors}, word_sample_size=4, seed=6, name="c")[0]
    np.testing.assert_array_equal(first.kept_rows, again.kept_rows)
    np.testing.assert_array_equal(first.kept_vectors, again.kept_vectors)
    assert not np.array_equal(first.kept_rows, other.kept_rows)


def test_missing_rows_are_skipped_as_in_a_shard(tmp_path, corpus):
    index, vectors, copies = corpus
    vectors = vectors.copy()
    rng = np.random.default_rng(2)
    missing = rng.choice(len(vectors), size=40, replace=False)
    vectors[missing[:30]] = np.nan
    vectors[missing[30:]] = 0.0  # all zero: no vector either
    expected, streamed, _ = _shard_and_stream(tmp_path, index, vectors, copies)
    assert streamed.summary["n_missing"] == expected.summary["n_missing"] == 40
    columns = ["word", "n", "n_with_repeats", "selfsim", "mev", "mev_centered"]
    pd.testing.assert_frame_equal(
        streamed.words[columns], expected.words[columns], check_exact=False, rtol=1e-6
    )
    np.testing.assert_allclose(streamed.words["selfsim"], expected.words["selfsim"], rtol=1e-10)
    pd.testing.assert_frame_equal(
        streamed.sentences, expected.sentences, check_exact=False, rtol=1e-10
    )
    measured = streamed.summary["measures"]
    for name in ("anisotropy", "selfsim", "intrasim"):
        np.testing.assert_allclose(
            measured[name]["raw"], expected.summary["measures"][name]["raw"], rtol=1e-10
        )
    # the baseline's draws are over all occurrences, the missing ones left out
    assert 0 < measured["mev"]["baseline"] < 1


def test_two_layers_and_static_vectors(tmp_path, corpus):
    index, vectors, _ = corpus
    second = np.tanh(vectors[:, ::-1]) * 3
    states = _stream(tmp_path, index, {4: vectors, 9: second})
    one_thread = _stream(tmp_path, index, {4: vectors, 9: second}, name="one")
    for layer, state in states.items():
        np.testing.assert_array_equal(
            state.sums.word_unit_sum, one_thread[layer].sums.word_unit_sum
        )
        np.testing.assert_array_equal(state.kept_vectors, one_thread[layer].kept_vectors)
    assert [state.attributes["layer"] for state in states.values()] == [4, 9]
    for state, layer_shards in zip(states.values(), (vectors, second), strict=True):
        for method in ("pc1", "mean"):
            words, matrix = static_vectors(layer_shards, index.occurrences, index.vocab, method)
            found, streamed = static_vectors_from_state(
                state, index.occurrences, index.vocab, method
            )
            assert found == words
            np.testing.assert_allclose(streamed, matrix, rtol=1e-5, atol=1e-6)


def test_state_file_round_trip_and_refusals(tmp_path, corpus):
    index, vectors, copies = corpus
    state = _stream(tmp_path, index, {2: vectors}, copies=copies)[2]
    attributes = state.attributes
    assert attributes["complete"] is True
    assert attributes["model"] == "test" and attributes["layer"] == 2
    assert attributes["n_missing"] == 0 and attributes["n_valid"] == len(vectors)
    assert attributes["streaming"]["word_sample_size"] == 10_000
    np.testing.assert_array_equal(state.kept_vectors, vectors[state.kept_rows])
    assert state.sums.word_n.sum() == index.vocab.loc[index.vocab["indexed"], "count"].sum()
    path = tmp_path / "state" / "layer_2.state.h5"
    assert sorted(p.name for p in path.parent.iterdir()) == ["layer_2.state.h5"]
    with pytest.raises(ShardMismatchError, match="occurrence index"):
        load_state(path, "another-index")
    with pytest.raises(ShardMismatchError, match="n_rows"):
        load_state(path, "test-index", len(vectors) + 1)
    with pytest.raises(ShardMismatchError, match="model"):
        load_state(path, expected={"model": "other"})
    with pytest.raises(ValueError, match="seed"):
        measure_streamed_layer(state, index.occurrences, index.vocab, MeasureSettings(seed=99))


def _accumulator(tmp_path, index, **changes):
    occurrences = index.occurrences
    return StreamingAccumulator(
        {0: tmp_path / "s" / "layer_0.state.h5"},
        occurrences["word_id"].to_numpy(),
        occurrences["sentence_id"].to_numpy(),
        DIM,
        {"index_checksum": "test-index"},
        StreamingSettings(baseline_sample_size=50, sample_replicates=2),
        **changes,
    )


def test_blocks_must_hold_whole_sentences_in_order_and_abort_leaves_nothing(tmp_path, corpus):
    index, vectors, _ = corpus
    sentence_id = index.occurrences["sentence_id"].to_numpy()
    split = next(
        row for row in range(1, len(sentence_id)) if sentence_id[row] == sentence_id[row - 1]
    )
    block = vectors[None]
    with (
        pytest.raises(ValueError, match="split a sentence"),
        _accumulator(tmp_path, index) as accumulator,
    ):
        accumulator.write(0, block[:, :split])
    assert list((tmp_path / "s").iterdir()) == []
    (start, end), *_ = _blocks(sentence_id, 3)
    with (
        pytest.raises(ValueError, match="expected 0"),
        _accumulator(tmp_path, index) as accumulator,
    ):
        accumulator.write(end, block[:, end:])
    with (
        pytest.raises(ValueError, match="commit after"),
        _accumulator(tmp_path, index) as accumulator,
    ):
        accumulator.write(start, block[:, start:end])
        accumulator.commit({})
    accumulator = _accumulator(tmp_path, index)
    accumulator.write(0, block)
    accumulator.abort()
    assert list((tmp_path / "s").iterdir()) == []


# --------------------------------------------------------------------------------------
# through extraction: a tiny random-init BERT
# --------------------------------------------------------------------------------------

MODEL_SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "The quick brown fox jumps over the lazy dog!",
    "Bushfires forced hundreds of residents to leave their homes.",
    "The bank raised interest rates; the river bank flooded.",
    "Is it true that 1,650 people voted?",
    "The dog and the cat sat in the park.",
    "Residents of the river bank left their homes.",
    "Bushfires",
    "The lazy fox watched the dog.",
]


def test_streaming_extraction_equals_shards_and_measure_layer(tiny_bert_dir, tmp_path):
    from contextuality.backends import load_model
    from contextuality.backends.settings import ModelSettings
    from contextuality.corpus.words import split_words
    from contextuality.extraction.units import sentence_units
    from contextuality.storage.shards import load_shard, shard_attributes

    from extraction import extract_into, extract_into_shards, with_spec

    loaded = with_spec(
        load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir))), segment_words=16
    )
    layers = (0, 1, 2)
    index = build_occurrence_index(
        [split_words(sentence) for sentence in MODEL_SENTENCES], IndexSettings(min_contexts=2)
    )
    occurrences = index.occurrences
    units = sentence_units(loaded, MODEL_SENTENCES)
    attributes = {"model": "tiny-bert", "index_checksum": "test-index"}
    shard_paths = {layer: tmp_path / "shards" / f"layer_{layer}.h5" for layer in layers}
    state_paths = {layer: tmp_path / "states" / f"layer_{layer}.state.h5" for layer in layers}
    extract_into_shards(loaded, units, layers, shard_paths, attributes)
    settings = StreamingSettings.from_measures(SETTINGS, word_sample_size=1000)
    accumulator = StreamingAccumulator(
        state_paths,
        occurrences["word_id"].to_numpy(),
        occurrences["sentence_id"].to_numpy(),
        loaded.hidden_size,
        attributes,
        settings,
        indexed=index.vocab["indexed"].to_numpy(),
    )
    report = extract_into(loaded, units, layers, accumulator)
    assert report.shard_bytes == 0 and report.n_occurrences == len(occurrences)
    assert sorted(p.name for p in (tmp_path / "states").iterdir()) == [
        f"layer_{layer}.state.h5" for layer in layers
    ]
    for layer in layers:
        vectors, _ = load_shard(shard_paths[layer], "test-index", len(occurrences))
        expected = measure_layer(vectors, occurrences, index.vocab, SETTINGS)
        state = load_state(state_paths[layer], "test-index", len(occurrences))
        assert state.attributes["n_missing"] == shard_attributes(shard_paths[layer])["n_missing"]
        streamed = measure_streamed_layer(state, occurrences, index.vocab, SETTINGS)
        assert len(streamed.words) >= 5 and len(streamed.sentences) == 9
        columns = [c for c in streamed.words.columns if c != "n_sampled"]
        pd.testing.assert_frame_equal(
            streamed.words[columns], expected.words[columns], check_exact=False, rtol=1e-7
        )
        pd.testing.assert_frame_equal(
            streamed.sentences, expected.sentences, check_exact=False, rtol=1e-7
        )
        _compare_summaries(expected, streamed, rtol=1e-7)


def test_stream_model_step_equals_extract_and_measure_steps(tiny_bert_dir, tmp_path):
    from contextuality import steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.files.provenance import read_json

    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(MODEL_SENTENCES) + "\n")
    corpus_settings = {
        "source": "text",
        "name": "t",
        "text": {"path": str(text), "split_sentences": False},
    }
    sentences = tmp_path / "sentences.parquet"
    steps.sentences(CorpusSettings.from_config(corpus_settings), [text], sentences)
    index = IndexFiles(
        tmp_path / "occ.parquet", tmp_path / "vocab.parquet", tmp_path / "index.json"
    )
    steps.occurrence_index(sentences, IndexSettings(min_contexts=2), index)
    model = {"source": str(tiny_bert_dir), "device": "cpu", "gpus": 0, "layers": [1, 2]}
    measure_settings = MeasureSettings(
        baseline_sample_size=50, bootstrap_resamples=20, sample_replicates=3
    )
    shard_paths = {layer: tmp_path / "emb" / f"layer_{layer}.h5" for layer in (1, 2)}
    state_paths = {layer: tmp_path / "stream" / f"layer_{layer}.state.h5" for layer in (2, 1)}
    extracted = backends.model_settings("tiny", model)
    steps.extract(
        extracted,
        sentences,
        index,
        steps.LayerOutputs(files=shard_paths, meta=tmp_path / "emb" / "meta.json"),
        progress=False,
        seed=0,
    )
    meta = steps.stream(
        extracted,
        sentences,
        index,
        steps.LayerOutputs(files=state_paths, meta=tmp_path / "stream" / "meta.json"),
        measures=measure_settings,
        word_sample_size=3,
        progress=False,
    )
    assert meta["layers"] == [1, 2] and meta["shard_bytes"] == 0
    for layer in (1, 2):
        outputs = {kind: tmp_path / "out" / f"{kind}{layer}" for kind in ("shard", "stream")}
        steps.measure_layer(
            shard_paths[layer],
            sentences,
            index,
            measure_settings,
            steps.MeasureOutputs(
                f"{outputs['shard']}.parquet",
                f"{outputs['shard']}.sentences.parquet",
                f"{outputs['shard']}.json",
            ),
            model_settings=extracted,
            layer=layer,
        )
        streamed = steps.measure_streamed_layer(
            state_paths[layer],
            index,
            measure_settings,
            steps.MeasureOutputs(
                f"{outputs['stream']}.parquet",
                f"{outputs['stream']}.sentences.parquet",
                f"{outputs['stream']}.json",
            ),
            model_settings=extracted,
            layer=layer,
        )
        expected = read_json(f"{outputs['shard']}.json")
        assert streamed["layer"] == expected["layer"] == layer
        assert streamed["layer_output"] == expected["layer_output"]
        assert streamed["streaming"]["word_sample_size"] == 3
        for name in ("selfsim", "intrasim", "anisotropy"):
            assert streamed["measures"][name]["raw"] == pytest.approx(
                expected["measures"][name]["raw"], rel=1e-7
            )
        words = pd.read_parquet(f"{outputs['stream']}.parquet")
        assert (words["n_sampled"] == np.minimum(words["n"], 3)).all()
        for method in ("pc1", "mean"):
            steps.static_vectors(
                index,
                method,
                tmp_path / "out" / f"{method}{layer}.txt",
                state=state_paths[layer],
            )
        steps.static_vectors(
            index,
            "mean",
            tmp_path / "out" / f"shard_mean{layer}.txt",
            shards=shard_paths[layer],
        )
        streamed_mean = (tmp_path / "out" / f"mean{layer}.txt").read_text().splitlines()
        shard_mean = (tmp_path / "out" / f"shard_mean{layer}.txt").read_text().splitlines()
        assert [line.split()[0] for line in streamed_mean] == [
            line.split()[0] for line in shard_mean
        ]
        np.testing.assert_allclose(
            np.loadtxt(streamed_mean[1:], usecols=range(1, 33), comments=None),
            np.loadtxt(shard_mean[1:], usecols=range(1, 33), comments=None),
            rtol=1e-5,
            atol=1e-6,
        )


def test_a_failed_streaming_extraction_leaves_no_state(tiny_bert_dir, tmp_path, monkeypatch):
    from contextuality.backends import load_model
    from contextuality.backends.base import ModelSettings
    from contextuality.corpus.words import split_words
    from contextuality.extraction import run
    from contextuality.extraction.units import sentence_units

    from extraction import extract_into, with_spec

    loaded = load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))
    index = build_occurrence_index([split_words(s) for s in MODEL_SENTENCES], IndexSettings())
    occurrences = index.occurrences

    def accumulator(layers):
        return StreamingAccumulator(
            {layer: tmp_path / "states" / f"layer_{layer}.state.h5" for layer in layers},
            occurrences["word_id"].to_numpy(),
            occurrences["sentence_id"].to_numpy(),
            loaded.hidden_size,
            {},
            StreamingSettings(),
        )

    units = sentence_units(loaded, MODEL_SENTENCES)
    with pytest.raises(ValueError, match="sink takes layers"):
        extract_into(loaded, units, (0, 1), accumulator((1, 0)))
    assert list((tmp_path / "states").iterdir()) == []
    calls = []
    original = run._run_segment

    def fail_on_second_block(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("interrupted")
        return original(*args, **kwargs)

    monkeypatch.setattr(run, "_run_segment", fail_on_second_block)
    with pytest.raises(RuntimeError, match="interrupted"):
        extract_into(with_spec(loaded, segment_words=16), units, (0, 2), accumulator((0, 2)))
    assert len(calls) == 2
    assert list((tmp_path / "states").iterdir()) == []


def test_stream_command(tiny_bert_dir, tmp_path):
    from contextuality.cli import main
    from contextuality.files.provenance import read_json

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(MODEL_SENTENCES) + "\n")
    sentences, index, out = tmp_path / "sentences.parquet", tmp_path / "index", tmp_path / "out"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    assert main(["index", str(sentences), "-o", str(index), "--min-contexts", "2"]) == 0
    model = [str(tiny_bert_dir), "--sentences", str(sentences), "--index", str(index)]
    arguments = ["stream", *model, "--layers", "0,2", "--device", "cpu"]
    assert main([*arguments, "--word-sample-size", "4", "-o", str(out)]) == 0
    for layer in (0, 2):
        summary = read_json(out / f"layer_{layer}.json")
        assert summary["layer"] == layer and summary["streaming"]["word_sample_size"] == 4
        assert "selfsim" in summary["measures"] and "isoscore" not in summary["measures"]
        assert (out / f"layer_{layer}.sentences.parquet").is_file()
    static = ["static", str(out / "layer_2.state.h5"), "--index", str(index), "--state"]
    assert main([*static, "-o", str(tmp_path / "pc1.txt")]) == 0
    n_words, dim = (tmp_path / "pc1.txt").read_text().splitlines()[0].split()
    assert int(n_words) >= 5 and int(dim) == 32


@pytest.mark.workflow
def test_a_streamed_model_in_the_workflow_measures_as_its_shards(tmp_path, tiny_bert_dir):
    """``models.<name>.streaming`` runs the model into state files, no shard: the layer
    table's streamed measures equal those of the same model extracted to shards, with a
    word sample holding every occurrence (so MEV is exact too); static vectors come too."""
    from test_workflow import _config, _write_corpus
    from workflow_runs import snakemake, write_config

    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    bert = {"source": str(tiny_bert_dir), "layers": [0, 2]}
    streamed = {**bert, "streaming": {"word_sample_size": 100_000}}
    config = _config(corpus, {"stored": bert, "streamed": streamed})
    config["measures"]["transforms"] = ["none"]
    write_config(tmp_path, config)
    targets = ["all", "results/static/streamed/none/pc1/layer_2.txt"]
    result = snakemake(tmp_path, *targets)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "results/embeddings/streamed").exists()
    assert (tmp_path / "results/streaming/streamed/layer_2.state.h5").is_file()
    assert not list(tmp_path.glob("results/degeneration/streamed/**/*.parquet"))

    table = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    streamed_measures = ["selfsim", "intrasim", "anisotropy", "mev", "mev_centered"]
    for layer in (0, 2):
        rows = {
            model: table[(table["model"] == model) & (table["layer"] == layer)].set_index("measure")
            for model in ("stored", "streamed")
        }
        for measure in streamed_measures:
            for column in ("raw", "baseline", "adjusted", "n"):
                assert rows["streamed"].loc[measure, column] == pytest.approx(
                    rows["stored"].loc[measure, column], rel=1e-6, abs=1e-9, nan_ok=True
                ), (layer, measure, column)
        assert "selfsim[paper]" in rows["stored"].index
        assert "selfsim[paper]" not in rows["streamed"].index
    assert (tmp_path / "results/static/streamed/none/pc1/layer_2.txt").is_file()


def test_streaming_is_refused_with_corrections_or_a_reference_and_allowed_in_parts(tmp_path):
    from workflow_runs import SNAKEFILE

    from contextuality.errors import ConfigError
    from contextuality.workflow import check_config

    schema = SNAKEFILE.parent / "schemas/config.schema.yaml"
    base = {
        "corpus": {"name": "c", "source": "text", "text": {"path": "c.txt"}},
        "models": {"m": {"source": "some/model", "streaming": True}},
    }
    with pytest.raises(ConfigError, match=r"measures.transforms.*stream"):
        check_config(base, schema)  # the default transforms include a correction
    streaming = {**base, "measures": {"transforms": ["none"]}}
    check_config(streaming, schema)
    check_config({**streaming, "extraction": {"partitions": 2}}, schema)
    with pytest.raises(ConfigError, match="reference.models.m"):
        check_config({**streaming, "reference": {"models": {"m": "bert"}}}, schema)
    with pytest.raises(ConfigError, match="word_sample_size"):
        bad = {"streaming": {"word_sample_size": 0}, "source": "some/model"}
        check_config({**streaming, "models": {"m": bad}}, schema)
