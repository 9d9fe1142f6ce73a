"""The API's alignment within one model (`contextuality.alignment`, `geometry.layer_pairs`):
each unordered pair of layers computed once, the pair and its reverse the same row; values
and intervals those of the ordered computation (`alignment.alignment_between`); CKA and
its null by brute force; the diagonal its best value with no null; the word baselines at
once those of each baseline aligned alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import contextuality
from contextuality.api import AlignmentSettings, GeometrySettings
from contextuality.api.geometry import (
    _layers,
    baselines_at_once,
    sample_of,
)
from contextuality.configuration.random_streams import generator
from contextuality.geometry.alignment import alignment_between
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.baselines import word_baselines

SETTINGS = GeometrySettings(
    seed=3,
    confidence=0.9,
    sample_size=None,
    alignment=AlignmentSettings(k=4, permutations=5, bootstrap=6),
)
MEASURES = [record.name for record in ALIGNMENT_MEASURES]
# The columns that a permutation null gives (drawn otherwise than in the ordered table).
NULL_COLUMNS = ("null_", "threshold_", "p_", "calibrated_")


def _rows(seed: int = 0, n_sentences: int = 40, per_sentence: int = 5, width: int = 6):
    """Four layers of one model: a layer, its rotation, it with noise, and noise."""
    rng = np.random.default_rng(seed)
    sentences = np.repeat(np.arange(n_sentences), per_sentence)
    first = rng.normal(size=(len(sentences), width))
    rotation = np.linalg.qr(rng.normal(size=(width, width)))[0]
    layers = {
        0: first,
        1: first @ rotation,
        2: first + rng.normal(size=first.shape),
        3: rng.normal(size=first.shape),
    }
    return layers, sentences


def _by_pair(table: pd.DataFrame) -> pd.DataFrame:
    return table.set_index(["occurrences", "layer_a", "layer_b"]).sort_index()


def _cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA by its definition, on centered columns."""
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)
    return np.linalg.norm(y.T @ x) ** 2 / (np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y))


def test_a_pair_and_its_reverse_are_one_row_of_values():
    """Every measure's value, interval, null, p-value and calibrated score of (a, b) is
    that of (b, a), exactly, on both sets of occurrences."""
    layers, sentences = _rows()
    table = _by_pair(contextuality.alignment(layers, sentences=sentences, settings=SETTINGS).table)
    columns = [column for column in table if column not in ("model_a", "model_b")]
    checked = 0
    for occurrences, a, b in table.index:
        if a < b:
            one, other = (
                table.loc[(occurrences, a, b), columns],
                table.loc[(occurrences, b, a), columns],
            )
            pd.testing.assert_series_equal(one, other, check_names=False)
            checked += 1
    assert checked == 2 * 6  # 4 layers: 6 pairs, on every row and past the first word
    assert table["null_cka"].drop(index=[(o, a, a) for o, a, _ in table.index]).notna().all()


def test_values_and_intervals_are_the_ordered_computation_s():
    """Value, bootstrap interval and bias of each pair (a < b) are what the ordered
    computation of every pair (`alignment_between`, the workflow's table) gives for
    (a, b): the same bootstrap draws, the same products."""
    layers, sentences = _rows(seed=1)
    table = _by_pair(contextuality.alignment(layers, sentences=sentences, settings=SETTINGS).table)
    sample = sample_of(sentences, None, None, "test")
    ordered = alignment_between(
        ("left", _layers(layers, len(sentences), "left")),
        None,
        sample,
        SETTINGS.seed,
        SETTINGS.confidence,
        SETTINGS.alignment,
    ).table
    ordered = _by_pair(ordered)
    shared = [
        column
        for column in ordered
        if column not in ("model_a", "model_b", "transform") and not column.startswith(NULL_COLUMNS)
    ]
    above = [pair for pair in ordered.index if pair[1] < pair[2]]
    np.testing.assert_allclose(
        table.loc[above, shared].to_numpy(float),
        ordered.loc[above, shared].to_numpy(float),
        rtol=1e-10,
    )


def test_cka_and_its_null_are_those_of_brute_force():
    """CKA of each pair from its definition; its null the mean CKA of the layers with
    their rows shuffled as documented: per permutation, every layer but the first by a
    permutation of its own, drawn in layer order from the stream ``alignment_null``."""
    layers, sentences = _rows(seed=2)
    table = _by_pair(
        contextuality.alignment(
            layers, sentences=sentences, settings=SETTINGS, occurrences=("all",)
        ).table
    ).loc["all"]
    random = generator(SETTINGS.seed, "alignment_null")
    n_rows = len(sentences)
    orders = [
        [np.arange(n_rows)] + [random.permutation(n_rows) for _ in range(len(layers) - 1)]
        for _ in range(SETTINGS.alignment.permutations)
    ]
    for a in layers:
        for b in layers:
            if a == b:
                continue
            np.testing.assert_allclose(
                table.loc[(a, b), "cka"], _cka(layers[a], layers[b]), rtol=1e-10
            )
            nulls = [_cka(layers[a][order[a]], layers[b][order[b]]) for order in orders]
            np.testing.assert_allclose(table.loc[(a, b), "null_cka"], np.mean(nulls), rtol=1e-5)
    assert table.loc[(0, 1), "cka"] > 0.999 and table.loc[(0, 3), "cka"] < 0.5


def test_a_layer_with_itself_is_its_best_value_with_no_null():
    """The diagonal: each measure's best value (CKA 1, Procrustes 0), that value for
    interval and bias 0, and no null (NaN null, threshold, p-value, calibrated score)."""
    layers, sentences = _rows(seed=4)
    table = contextuality.alignment(layers, sentences=sentences, settings=SETTINGS).table
    diagonal = table[table["layer_a"] == table["layer_b"]]
    assert len(diagonal) == 2 * len(layers)
    for record in ALIGNMENT_MEASURES:
        name = record.name
        assert (diagonal[[name, f"{name}_low", f"{name}_high"]] == record.perfect).all().all()
        assert (diagonal[f"bias_{name}"] == 0).all()
        for prefix in NULL_COLUMNS:
            assert diagonal[f"{prefix}{name}"].isna().all()
    assert set(diagonal.loc[diagonal["layer_a"] == 0, "procrustes"]) == {0.0}


def test_a_set_of_occurrences_alone_is_that_set_of_the_whole_call():
    """Asked for the rows past the first word alone, the call passes over the draws of
    every row and gives the rows the whole call gives for that set."""
    layers, sentences = _rows(seed=5)
    whole = contextuality.alignment(layers, sentences=sentences, settings=SETTINGS).table
    alone = contextuality.alignment(
        layers, sentences=sentences, settings=SETTINGS, occurrences=("position>0",)
    ).table
    expected = whole[whole["occurrences"] == "position>0"].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, expected)


@pytest.mark.parametrize("permutations, bootstrap", [(1, 0), (2, 3)])
def test_the_table_says_what_was_drawn(permutations, bootstrap):
    """The cheaper settings of docs/api.md: as many nulls and draws as asked, and no
    interval without a bootstrap draw."""
    layers, sentences = _rows(seed=6)
    settings = GeometrySettings(
        seed=0,
        confidence=0.9,
        sample_size=None,
        alignment=AlignmentSettings(k=4, permutations=permutations, bootstrap=bootstrap),
    )
    table = contextuality.alignment(
        layers, sentences=sentences, settings=settings, occurrences=("all",)
    ).table
    assert len(table) == len(layers) ** 2
    assert (table["permutations"] == permutations).all()
    assert (table["bootstrap"] == bootstrap).all()
    assert table["cka_low"].isna().all() == (bootstrap == 0)


def test_the_word_baselines_at_once_are_each_one_aligned_alone():
    """The baselines aligned as the layers of one model give the rows, nulls and draws
    included, that each baseline aligned alone with the model's layers gives."""
    layers, sentences = _rows(seed=7)
    words = np.array([f"w{k}" for k in range(6)])[np.arange(len(sentences)) % 6]
    sample = sample_of(sentences, None, words, "test")
    model = _layers(layers, len(sentences), "left")
    arguments = (sample, SETTINGS.seed, SETTINGS.confidence, SETTINGS.alignment, "none")
    baselines = word_baselines(sample.words, sample.positions, SETTINGS.alignment.baselines)
    one_at_a_time = pd.concat(
        [
            alignment_between(("left", model), baseline, *arguments, ("all",)).table
            for baseline in baselines.items()
        ],
        ignore_index=True,
    )
    at_once = baselines_at_once("left", model, sample, SETTINGS, "none")
    assert list(at_once["model_b"].unique()) == ["word_identity", "word_position"]
    pd.testing.assert_frame_equal(at_once, one_at_a_time, check_exact=False, rtol=1e-10)
