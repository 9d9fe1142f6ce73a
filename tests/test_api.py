"""The public API on arrays (`contextuality.api`): the workflow's numbers from the same
calls on the default model and corpus, the word rows of hidden states as the extract step
pools them, invariances, refusals, and the examples of docs/api.md, each run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

import contextuality
from contextuality import api
from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.configuration.schema import with_defaults
from contextuality.geometry.alignment import sample_rows
from contextuality.geometry.settings import GeometrySettings
from contextuality.measures.settings import MeasureSettings
from contextuality.storage.shards import load_shard
from contextuality.workflow.config import geometry_settings

from conftest import shipped_config
from extraction import extract_every_layer

REPO = Path(__file__).resolve().parents[1]
LAYERS = (0, 6)


@pytest.fixture(scope="module")
def default_run(tmp_path_factory) -> Path:
    """The default config (MiniLM over the Lee corpus) on layers 0 and 6, with the
    ``center`` correction and the geometry on a sample: the workflow's outputs to match."""
    directory = tmp_path_factory.mktemp("default-run")
    config = shipped_config()
    config["models"]["minilm"]["layers"] = list(LAYERS)
    config["measures"]["transforms"] = ["none", "center"]
    config["geometry"] = {
        "activate": True,
        "sample_size": 600,
        "alignment": {"permutations": 4, "bootstrap": 4},
        "intrinsic_dimension": {"range_max": 16},
    }
    (directory / "config").mkdir()
    (directory / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow/Snakefile")]
    result = subprocess.run(
        [*command, "--directory", str(directory), "--cores", "2"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return directory


def _read(directory: Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The run's config (defaults filled in), occurrences and sentence table."""
    config = with_defaults(yaml.safe_load((directory / "config/config.yaml").read_text()))
    corpus = directory / "results" / "corpus"
    return (
        config,
        pd.read_parquet(corpus / "occurrences.parquet"),
        pd.read_parquet(corpus / "sentences.parquet"),
    )


def _layer(directory: Path, layer: int, n_rows: int, rows=None) -> np.ndarray:
    """A layer's stored float16 rows (all, or `rows`)."""
    checksum = json.loads((directory / "results/corpus/index.json").read_text())["index_checksum"]
    shard = directory / "results" / "embeddings" / "minilm" / f"layer_{layer}.h5"
    return load_shard(shard, checksum, n_rows, rows=rows)[0]


@pytest.mark.workflow
@pytest.mark.parametrize("transform", ["none", "center"])
def test_a_layer_s_measures_from_arrays_are_the_workflow_s(default_run, transform):
    """`measure_layer` on a stored layer's rows, each row's word, sentence and position, and
    the sentences' copies gives every row of the layer's summary: the same measures, the
    same intervals' kinds and counts, values equal to within the summation order of BLAS
    across thread counts (1e-7 relative), NaN where the workflow's are."""
    config, occurrences, sentences = _read(default_run)
    fields = MeasureSettings.__dataclass_fields__
    settings = MeasureSettings(**{key: config["measures"][key] for key in fields})
    copies = dict(zip(sentences.index, sentences["n_copies"], strict=True))
    for layer in LAYERS:
        table = contextuality.measure_layer(
            _layer(default_run, layer, len(occurrences)),
            occurrences["word"],
            occurrences["sentence_id"],
            positions=occurrences["position"],
            transform=transform,
            settings=settings,
            sentence_copies=copies,
            model="minilm",
            layer=layer,
            n_layers=6,
        ).set_index("measure")
        path = default_run / "results" / "measures" / "minilm" / transform / f"layer_{layer}.json"
        stored = json.loads(path.read_text())["measures"]
        assert set(table.index) == set(stored)
        for measure, values in stored.items():
            row = table.loc[measure]
            for column, value in values.items():
                if isinstance(value, float) or value is None:
                    expected = np.nan if value is None else value
                    np.testing.assert_allclose(row[column], expected, rtol=1e-7, atol=1e-12)
                elif column in ("n", "interval"):
                    assert row[column] == value, (measure, column)


@pytest.mark.workflow
def test_the_geometry_from_arrays_is_the_workflow_s(default_run):
    """On the geometry's sampled rows, `intrinsic_dimension` gives each layer's plateau rows
    and curves and `alignment` the alignment table the workflow wrote, every row, value,
    interval and null; ``sampled`` differs, as the call was given every row it
    measured."""
    config, occurrences, _ = _read(default_run)
    settings = GeometrySettings.from_config(geometry_settings(config))
    rows = sample_rows(len(occurrences), settings.sample_size, settings.seed)
    geometry = default_run / "results" / "geometry" / "minilm" / "none"
    measures = pd.read_csv(default_run / "results/tables/measures.tsv", sep="\t", comment="#")
    layers = {}
    for layer in LAYERS:
        layers[layer] = _layer(default_run, layer, len(occurrences), rows)
        found = contextuality.intrinsic_dimension(
            layers[layer], settings, model="minilm", layer=layer, n_layers=6
        )
        curves = pd.read_parquet(geometry / f"dimension/layer_{layer}.parquet")
        columns = [column for column in curves if column != "layer_output"]
        pd.testing.assert_frame_equal(found.curves[columns], curves[columns], check_dtype=False)
        written = measures[measures["measure"].str.startswith("intrinsic_dimension")]
        written = written[written["layer"] == layer].set_index("measure")
        got = found.measures.set_index("measure").loc[written.index]
        np.testing.assert_allclose(got["raw"], written["raw"], rtol=1e-9)
    found = contextuality.alignment(
        layers,
        sentences=occurrences["sentence_id"].to_numpy()[rows],
        positions=occurrences["position"].to_numpy()[rows],
        words=occurrences["word"].to_numpy()[rows],
        settings=settings,
        names=("minilm", "minilm"),
    )
    stored = pd.read_parquet(geometry / "alignment.parquet")
    assert stored["sampled"].all() and not found.table["sampled"].any()
    pd.testing.assert_frame_equal(
        found.table.drop(columns="sampled"), stored.drop(columns="sampled"), check_exact=False
    )


def _synthetic(seed: int = 0, n_sentences: int = 80, per_sentence: int = 6, width: int = 12):
    """Rows of words from a small vocabulary, sentence labels and vectors with a shared
    direction."""
    rng = np.random.default_rng(seed)
    words = rng.choice([f"w{k}" for k in range(15)], size=n_sentences * per_sentence)
    sentences = np.repeat([f"s{k}" for k in range(n_sentences)], per_sentence)
    vectors = rng.normal(size=(len(words), width)) + 2.0 * rng.normal(size=width)
    return vectors.astype(np.float32), words, sentences


SMALL = MeasureSettings(baseline_sample_size=40, bootstrap_resamples=20, isotropy_samples=3)


def test_the_rows_order_and_array_kind_change_nothing():
    """Shuffled rows (positions given), and a torch tensor for a numpy array, give the same
    table: the measures read each row by its sentence and position, not its place."""
    vectors, words, sentences = _synthetic()
    positions = np.tile(np.arange(6), 80)
    table = api.measure_layer(vectors, words, sentences, settings=SMALL)
    order = np.random.default_rng(1).permutation(len(words))
    shuffled = api.measure_layer(
        torch.from_numpy(vectors[order]),
        words[order],
        sentences[order],
        positions=positions[order],
        settings=SMALL,
    )
    pd.testing.assert_frame_equal(table, shuffled)
    assert contextuality.measure_layer is api.measure_layer


def test_a_word_s_selfsim_from_arrays_is_the_mean_cosine_of_its_occurrences():
    """Brute force: SelfSim of a word is the mean cosine between its occurrences in
    different sentences (Ethayarajh's eq. 1), and the measure's row is their mean over
    the words in five or more sentences."""
    vectors, words, sentences = _synthetic(seed=3)
    table = api.measure_layer(vectors, words, sentences, settings=SMALL).set_index("measure")
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    means = []
    for word in np.unique(words):
        rows = np.flatnonzero(words == word)
        if len(np.unique(sentences[rows])) < 5:
            continue
        cosines = unit[rows] @ unit[rows].T
        apart = sentences[rows][:, None] != sentences[rows][None, :]
        means.append(cosines[apart].mean())
    np.testing.assert_allclose(table.loc["selfsim", "raw"], np.mean(means), rtol=1e-5)
    assert table.loc["selfsim", "n"] == len(means)


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda v, w, s: (v[None], w, s), "expected a 2-D array"),
        (lambda v, w, s: (v, w[:-1], s), "words: expected one value per row"),
        (lambda v, w, s: (v, w, s[:-1]), "sentences: expected one value per row"),
    ],
)
def test_arrays_that_do_not_line_up_are_refused_in_one_line(change, said):
    vectors, words, sentences = _synthetic()
    with pytest.raises(ValueError, match=said):
        api.measure_layer(*change(vectors, words, sentences), settings=SMALL)


def test_a_position_given_twice_in_a_sentence_is_refused():
    vectors, words, sentences = _synthetic()
    positions = np.tile(np.arange(6), 80)
    positions[1] = 0
    with pytest.raises(ValueError, match="repeats position 0 of sentence 's0'"):
        api.measure_layer(vectors, words, sentences, positions=positions, settings=SMALL)


def test_a_correction_from_arrays_measures_the_sentences_it_was_not_fitted_on():
    """Under ``center`` the rows are those of the sentences outside the fitting split, and
    the anisotropy baseline of centred vectors is near 0 where the raw one is not."""
    vectors, words, sentences = _synthetic()
    raw = api.measure_layer(vectors, words, sentences, settings=SMALL).set_index("measure")
    centred = api.measure_layer(
        vectors, words, sentences, transform="center", settings=SMALL
    ).set_index("measure")
    assert raw.loc["anisotropy", "raw"] > 0.5
    assert abs(centred.loc["anisotropy", "raw"]) < 0.05
    assert centred.loc["intrasim", "n"] < raw.loc["intrasim", "n"]
    assert (centred.index == raw.index).all()


@pytest.mark.parametrize("which", ["tiny_bert_dir", "tiny_gpt2_dir"])
def test_word_rows_of_hidden_states_are_the_extract_step_s(request, tmp_path, which):
    """`word_rows` on transformers' padded batch output and offsets gives each word the
    vector the extract step stores for it (float16 there), every layer, the words in
    sentence order."""
    from transformers import AutoModel, AutoTokenizer

    directory = request.getfixturevalue(which)
    texts = ["The cat sat on the mat.", "A dog ran in the park, and the cat watched it."]
    loaded = load_model(ModelSettings(name="tiny", source=str(directory)))
    _, stored = extract_every_layer(loaded, texts, tmp_path / "shards")
    tokenizer = AutoTokenizer.from_pretrained(directory)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModel.from_pretrained(directory).eval()
    encoded = tokenizer(texts, return_tensors="pt", padding=True, return_offsets_mapping=True)
    offsets = encoded.pop("offset_mapping")
    with torch.no_grad():
        hidden = model(**encoded, output_hidden_states=True).hidden_states
    rows = api.word_rows(hidden, offsets, texts, attention_mask=encoded["attention_mask"])
    assert rows.words[:3] == ["The", "cat", "sat"] and rows.positions[7] == 0
    assert list(rows.sentences) == [0] * 7 + [1] * 13
    for layer, vectors in rows.layers.items():
        scale = float(np.abs(stored[layer]).max())
        np.testing.assert_allclose(vectors, stored[layer], rtol=2e-3, atol=2e-3 * scale)


def _constructed_batch():
    """Hidden states of two layers for two texts, their offsets and attention mask: the
    first text's first word split in two tokens, special and padding tokens empty."""
    states = torch.arange(2 * 2 * 5 * 3, dtype=torch.float32).reshape(2, 2, 5, 3)
    offsets = torch.tensor(
        [
            [(0, 0), (0, 1), (1, 2), (3, 5), (0, 0)],
            [(0, 0), (0, 2), (2, 3), (0, 0), (0, 0)],
        ]
    )
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]])  # "!" of "ef!" masked out
    return states, offsets, mask


@pytest.mark.parametrize("stacked", [False, True])
def test_word_rows_pool_each_word_s_tokens_by_their_spans(stacked):
    """Brute force on constructed states: a word split in two tokens is their mean, a
    special or padding token (empty span, or masked) serves no word, and one stacked
    (layers, batch, tokens, d) array (a TransformerLens cache's ``accumulated_resid()``)
    gives what the per-layer sequence gives."""
    states, offsets, mask = _constructed_batch()
    hidden = states if stacked else tuple(states)
    rows = api.word_rows(hidden, offsets, ["ab cd", "ef!"], attention_mask=mask)
    assert rows.words == ["ab", "cd", "ef", "!"]
    assert list(rows.sentences) == [0, 0, 1, 1] and list(rows.positions) == [0, 1, 0, 1]
    for layer in (0, 1):
        expected = torch.stack(
            [
                states[layer, 0, 1:3].mean(0),
                states[layer, 0, 3],
                states[layer, 1, 1],
                torch.full((3,), float("nan")),
            ]
        )
        np.testing.assert_array_equal(rows.layers[layer], expected.numpy())


def test_batches_given_their_sentence_ids_concatenate_into_the_whole_s_rows():
    """Each text alone, given its place in the corpus as its sentence id, then
    `WordRows.concatenate`, gives the rows of both texts in one batch; without ids both
    batches would be sentence 0, which concatenate refuses."""
    states, offsets, mask = _constructed_batch()
    texts = ["ab cd", "ef!"]
    whole = api.word_rows(states, offsets, texts, attention_mask=mask)
    parts = [
        api.word_rows(
            states[:, item : item + 1],
            offsets[item : item + 1],
            texts[item : item + 1],
            attention_mask=mask[item : item + 1],
            sentence_ids=[item],
        )
        for item in (0, 1)
    ]
    joined = api.WordRows.concatenate(parts)
    assert joined.words == whole.words and joined.sentences.dtype == np.int64
    np.testing.assert_array_equal(joined.sentences, whole.sentences)
    np.testing.assert_array_equal(joined.positions, whole.positions)
    for layer in whole.layers:
        np.testing.assert_array_equal(joined.layers[layer], whole.layers[layer])
    unnumbered = [
        api.word_rows(states[:, item : item + 1], offsets[item : item + 1], texts[item : item + 1])
        for item in (0, 1)
    ]
    with pytest.raises(ValueError, match="batches 0 and 1 both have sentence 0"):
        api.WordRows.concatenate(unnumbered)


def test_sentence_ids_label_the_rows_and_are_one_per_text():
    states, offsets, mask = _constructed_batch()
    texts = ["ab cd", "ef!"]
    rows = api.word_rows(states, offsets, texts, attention_mask=mask, sentence_ids=("x", "y"))
    assert list(rows.sentences) == ["x", "x", "y", "y"]
    with pytest.raises(ValueError, match="sentence_ids: text 1 has id 'x', as text 0 has"):
        api.word_rows(states, offsets, texts, attention_mask=mask, sentence_ids=["x", "x"])
    with pytest.raises(ValueError, match=r"sentence_ids: expected one value per row \(2\)"):
        api.word_rows(states, offsets, texts, attention_mask=mask, sentence_ids=[0])


def _examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "docs" / "api.md").read_text(), re.S)


@pytest.mark.parametrize("number", range(len(_examples())))
def test_each_example_of_the_api_page_runs(number):
    """docs/api.md's examples run as written, their assertions included."""
    exec(compile(_examples()[number], f"docs/api.md example {number}", "exec"), {})
