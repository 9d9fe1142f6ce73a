"""Representation degeneration: rank bins, exact kNN, per-word and per-occurrence statistics,
their bin table and correlations, the cone projection, and its figures."""

from __future__ import annotations

import math

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from contextuality.errors import ConfigError
from contextuality.figures import degeneration as degeneration_figures
from contextuality.figures.paper import figure_sidecar
from contextuality.files.provenance import read_json, sha256_file
from contextuality.files.tables import TABLE_DIGEST
from contextuality.measures.degeneration import (
    DegenerationSettings,
    bin_labels,
    bins_table,
    cone_projection,
    frequency_correlations,
    nearest_neighbours,
    occurrence_degeneration,
    rank_bins,
    word_degeneration,
)
from contextuality.rows import SelectedRows


def _layer(word_id: np.ndarray, indexed: np.ndarray | None = None):
    """Occurrence table (10 words a sentence) and vocabulary for occurrences of `word_id`;
    frequency_rank by count, ties by word_id; every word indexed unless `indexed` says."""
    n_types = int(word_id.max()) + 1
    counts = np.bincount(word_id, minlength=n_types)
    rank = np.empty(n_types, dtype=np.int64)
    rank[np.lexsort((np.arange(n_types), -counts))] = np.arange(1, n_types + 1)
    vocab = pd.DataFrame(
        {
            "word_id": np.arange(n_types),
            "word": [f"w{i}" for i in range(n_types)],
            "count": counts,
            "n_contexts": counts,
            "frequency_rank": rank,
            "indexed": np.ones(n_types, dtype=bool) if indexed is None else indexed,
        }
    )
    occurrences = pd.DataFrame({"sentence_id": np.arange(len(word_id)) // 10, "word_id": word_id})
    return occurrences, vocab


def _brute_force(queries, points, k, exclude=None):
    """Indices and distances of the k nearest from the full distance matrix."""
    distances = np.sqrt(((queries[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
    if exclude is not None:
        matched = np.flatnonzero(exclude >= 0)
        distances[matched, exclude[matched]] = np.inf
    indices = np.argsort(distances, axis=1, kind="stable")[:, :k]
    return indices, np.take_along_axis(distances, indices, axis=1)


# Rank bins and settings


def test_bert_flow_edges_at_bert_vocabulary_size():
    bins = rank_bins(30522, DegenerationSettings())
    assert bins == [(0, 100), (100, 500), (500, 5000), (5000, 10000), (10000, None)]
    assert bin_labels(bins) == ["0–100", "100–500", "500–5000", "5000–10000", "10000+"]


def test_edges_scale_with_the_vocabulary():
    assert rank_bins(3052, DegenerationSettings()) == [
        (0, 10),
        (10, 50),
        (50, 500),
        (500, 1000),
        (1000, None),
    ]


def test_tiny_vocabulary_merges_edges_and_drops_zeros():
    # 100, 500 → 0 (dropped); 5000 → 1.64 → 2; 10000 → 3.28 → 3
    assert rank_bins(10, DegenerationSettings()) == [(0, 2), (2, 3), (3, None)]
    # 5000 → 0.49 → 0; 10000 → 0.98 → 1; the rest dropped
    assert rank_bins(3, DegenerationSettings()) == [(0, 1), (1, None)]
    assert rank_bins(1, DegenerationSettings()) == [(0, None)]


def test_no_reference_vocabulary_keeps_the_edges():
    settings = DegenerationSettings(rank_edges=(30, 150, 3000), reference_vocabulary=None)
    assert rank_bins(40, settings) == [(0, 30), (30, 150), (150, 3000), (3000, None)]
    assert bin_labels(rank_bins(40, settings))[-1] == "3000+"


@pytest.mark.parametrize(
    "changes",
    [
        {"rank_edges": (100, 100)},
        {"rank_edges": (500, 100)},
        {"rank_edges": (0, 100)},
        {"rank_edges": ()},
        {"rank_edges": (1.5, 3)},
        {"rank_edges": 100},
        {"reference_vocabulary": 0},
        {"neighbours": 0},
        {"occurrence_queries": 0},
        {"cone_points": 0},
        {"seed": -1},
    ],
)
def test_settings_refuse_bad_values(changes):
    with pytest.raises(ConfigError):
        DegenerationSettings(**changes)


def test_settings_take_a_yaml_list_as_edges():
    assert DegenerationSettings(rank_edges=[10, 20]).rank_edges == (10, 20)


# Nearest neighbours


@pytest.mark.parametrize("chunk_bytes", [64 * 2**20, 1, 4 * 120 * 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nearest_neighbours_equal_brute_force(chunk_bytes, dtype):
    rng = np.random.default_rng(0)
    points = (rng.standard_normal((120, 7)) + 2.0).astype(dtype)
    points[5] = points[9]  # a duplicate: distance 0 to its twin, not to itself
    chosen = rng.choice(120, size=25, replace=False)
    chosen[0] = 5
    queries = points[chosen]
    exclude = chosen.copy()
    exclude[1::3] = -1  # these queries may match themselves
    indices, distances = nearest_neighbours(queries, points, 4, exclude, chunk_bytes=chunk_bytes)
    expected_indices, expected_distances = _brute_force(
        queries.astype(np.float64), points.astype(np.float64), 4, exclude
    )
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-12, atol=1e-12)
    assert indices[0, 0] == 9 and distances[0, 0] == 0
    assert np.all(indices[1::3, 0] == chosen[1::3])  # not excluded: itself first


@pytest.mark.parametrize("chunk_bytes", [64 * 2**20, 4 * 50 * 3])
def test_points_read_through_selected_rows_give_the_copied_rows_answer(chunk_bytes):
    """A layer's valid rows as points without copying them (`SelectedRows`) give the same
    neighbours, in the selection's numbering, as the copied rows."""
    rng = np.random.default_rng(2)
    layer = rng.standard_normal((80, 6)).astype(np.float32)
    rows = np.sort(rng.choice(80, size=50, replace=False))
    queries = layer[rows[:9]].astype(np.float64)
    exclude = np.arange(9)
    viewed = nearest_neighbours(
        queries, SelectedRows(layer, rows), 3, exclude, chunk_bytes=chunk_bytes
    )
    copied = nearest_neighbours(queries, layer[rows], 3, exclude, chunk_bytes=chunk_bytes)
    for got, expected in zip(viewed, copied, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert len(SelectedRows(layer, rows)) == 50 and SelectedRows(layer, rows)[[4]].shape == (1, 6)


def test_nearest_neighbours_with_outliers_and_concentrated_points():
    """Huge-norm points and points crowded far from the origin (the float32 screening's
    hard cases) give the float64 answer."""
    rng = np.random.default_rng(1)
    points = rng.standard_normal((300, 16)) * 1e-3 + 5.0
    points[[3, 77, 150]] *= 1e4
    queries = rng.standard_normal((40, 16)) * 1e-3 + 5.0
    indices, distances = nearest_neighbours(queries, points, 3, chunk_bytes=4 * 300 * 7)
    expected_indices, expected_distances = _brute_force(queries, points, 3)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-12)


def test_ties_go_to_the_lower_index():
    points = np.array([[2.0, 0], [0, 1], [1, 0], [-1, 0], [0, -1], [1, 0]])
    indices, distances = nearest_neighbours(np.zeros((1, 2)), points, 5)
    np.testing.assert_array_equal(indices, [[1, 2, 3, 4, 5]])
    np.testing.assert_array_equal(distances, np.ones((1, 5)))


def test_nearest_neighbours_refuse_too_few_points():
    points = np.eye(3)
    with pytest.raises(ValueError, match="at least k"):
        nearest_neighbours(points, points, 4)
    with pytest.raises(ValueError, match="at least k"):
        nearest_neighbours(points, points, 3, exclude=np.arange(3))
    assert nearest_neighbours(points, points, 2, exclude=np.arange(3))[0].shape == (3, 2)


# Per-word statistics


def _planted_layer(rng, n_words=12, d=6, monotone=False):
    """Word w has count 3(n_words − w) + 2 (rank w + 1) and occurrences at radius 1 + w around a
    direction of its own: frequent words near the origin, rare ones far out. Monotone:
    every occurrence of w is the same vector."""
    counts = 3 * (n_words - np.arange(n_words)) + 2
    word_id = np.repeat(np.arange(n_words), counts)
    directions = rng.standard_normal((n_words, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    vectors = (1.0 + np.arange(n_words))[word_id, None] * directions[word_id]
    if not monotone:
        vectors += 0.3 * rng.standard_normal(vectors.shape)
    order = rng.permutation(len(word_id))
    return vectors[order], word_id[order]


def test_monotone_planted_norms_correlate_minus_one_with_frequency():
    vectors, word_id = _planted_layer(np.random.default_rng(2), monotone=True)
    occurrences, vocab = _layer(word_id)
    words = word_degeneration(vectors, occurrences, vocab, DegenerationSettings())
    np.testing.assert_allclose(words["static_norm"], 1.0 + np.arange(12))
    np.testing.assert_allclose(words["occurrence_norm"], 1.0 + np.arange(12))
    assert frequency_correlations(words)["norm~frequency"] == pytest.approx(-1.0)
    assert frequency_correlations(words)["occurrence_norm~frequency"] == pytest.approx(-1.0)


def test_planted_norms_fall_with_frequency():
    vectors, word_id = _planted_layer(np.random.default_rng(3), n_words=30)
    occurrences, vocab = _layer(word_id)
    words = word_degeneration(vectors, occurrences, vocab, DegenerationSettings())
    correlations = frequency_correlations(words)
    assert correlations["norm~frequency"] < -0.9
    assert correlations["occurrence_norm~frequency"] < -0.9
    assert set(correlations) == {
        "occurrence_norm~frequency",
        "norm~frequency",
        "knn_distance~frequency",
        "mean_direction~frequency",
    }


def test_word_statistics_equal_a_hand_computation():
    rng = np.random.default_rng(4)
    word_id = rng.integers(0, 8, size=200)
    word_id[:8] = np.arange(8)
    vectors = rng.standard_normal((200, 5)).astype(np.float32) + 1.0
    vectors[[10, 11, 50]] = np.nan  # missing rows
    vectors[60] = 0.0  # no vector either
    word_id[[20, 21, 22]] = 8
    vectors[[20, 21, 22]] = np.nan  # word 8: no valid occurrence
    indexed = np.ones(9, dtype=bool)
    indexed[3] = False
    occurrences, vocab = _layer(word_id, indexed)
    settings = DegenerationSettings(neighbours=2)
    words = word_degeneration(vectors, occurrences, vocab, settings)

    valid = np.isfinite(vectors).all(axis=1) & np.any(vectors != 0, axis=1)
    frame = pd.DataFrame(vectors[valid].astype(np.float64)).assign(word=word_id[valid])
    means = frame.groupby("word").mean().drop(index=3)
    assert words["word_id"].tolist() == [0, 1, 2, 4, 5, 6, 7]
    assert words["n"].tolist() == frame.groupby("word").size().drop(index=3).tolist()
    np.testing.assert_allclose(words["static_norm"], np.linalg.norm(means, axis=1))
    norms = frame.drop(columns="word").pow(2).sum(axis=1).pow(0.5)
    expected_norms = norms.groupby(frame["word"]).mean().drop(index=3)
    np.testing.assert_allclose(words["occurrence_norm"], expected_norms, rtol=1e-6)
    direction = vectors[valid].astype(np.float64).mean(axis=0)
    cosines = means.to_numpy() @ direction / np.linalg.norm(means, axis=1)
    np.testing.assert_allclose(words["mean_direction_cosine"], cosines / np.linalg.norm(direction))
    neighbours, distances = _brute_force(means.to_numpy(), means.to_numpy(), 2, np.arange(7))
    np.testing.assert_allclose(words["static_knn_distance"], distances.mean(axis=1))
    dots = np.einsum("wd,wkd->wk", means.to_numpy(), means.to_numpy()[neighbours])
    np.testing.assert_allclose(words["static_knn_dot"], dots.mean(axis=1))
    ranks = vocab.set_index("word_id").loc[words["word_id"], "frequency_rank"]
    assert words["frequency_rank"].tolist() == ranks.tolist()
    assert rank_bins(9, settings) == [(0, 1), (1, 3), (3, None)]  # 5000 → 1, 10000 → 3
    labels = ["0–1" if rank == 1 else "1–3" if rank <= 3 else "3+" for rank in ranks]
    assert words["bin"].tolist() == labels


def test_too_few_words_give_nan_neighbours_and_correlations():
    vectors = np.array([[1.0, 0], [0, 2.0], [1.0, 1.0]])
    occurrences, vocab = _layer(np.array([0, 1, 1]))
    words = word_degeneration(vectors, occurrences, vocab, DegenerationSettings())
    assert len(words) == 2
    assert words["static_knn_distance"].isna().all()
    assert all(math.isnan(value) for value in frequency_correlations(words).values())


# Per-occurrence statistics


def test_occurrence_sample_is_seeded_and_drawn_from_indexed_words():
    rng = np.random.default_rng(5)
    word_id = rng.integers(0, 20, size=400)
    vectors = rng.standard_normal((400, 6))
    vectors[::7] = np.nan
    indexed = np.arange(20) % 4 != 0
    occurrences, vocab = _layer(word_id, indexed)
    settings = DegenerationSettings(occurrence_queries=50, neighbours=3)
    first = occurrence_degeneration(vectors, occurrences, vocab, settings)
    again = occurrence_degeneration(vectors, occurrences, vocab, settings)
    other = occurrence_degeneration(
        vectors, occurrences, vocab, DegenerationSettings(occurrence_queries=50, seed=1)
    )
    pd.testing.assert_frame_equal(first, again)
    assert set(first["occurrence_id"]) != set(other["occurrence_id"])
    assert len(first) == 50 and first["occurrence_id"].is_unique
    ids = first["occurrence_id"].to_numpy()
    assert indexed[word_id[ids]].all() and np.isfinite(vectors[ids]).all()
    np.testing.assert_array_equal(first["word_id"], word_id[ids])

    valid = np.flatnonzero(np.isfinite(vectors).all(axis=1))
    exclude = np.searchsorted(valid, ids)
    neighbours, distances = _brute_force(vectors[ids], vectors[valid], 3, exclude)
    np.testing.assert_allclose(first["knn_distance"], distances.mean(axis=1))
    dots = np.einsum("qd,qkd->qk", vectors[ids], vectors[valid][neighbours])
    np.testing.assert_allclose(first["knn_dot"], dots.mean(axis=1))
    np.testing.assert_allclose(first["norm"], np.linalg.norm(vectors[ids], axis=1))


def test_occurrence_sample_is_capped_by_what_is_available():
    rng = np.random.default_rng(6)
    word_id = rng.integers(0, 5, size=30)
    occurrences, vocab = _layer(word_id)
    queries = occurrence_degeneration(
        rng.standard_normal((30, 4)), occurrences, vocab, DegenerationSettings()
    )
    assert sorted(queries["occurrence_id"]) == list(range(30))


# Bin table


def test_table_keeps_empty_bins_and_averages_the_others():
    words = pd.DataFrame(
        {
            "word_id": [0, 1, 2],
            "frequency_rank": [1, 2, 9],
            "static_norm": [1.0, 3.0, 10.0],
            "static_knn_distance": [0.5, 1.5, 4.0],
            "static_knn_dot": [2.0, 4.0, 6.0],
            "mean_direction_cosine": [0.9, 0.7, 0.1],
        }
    )
    queries = pd.DataFrame(
        {
            "word_id": [0, 0, 1],
            "frequency_rank": [1, 1, 2],
            "norm": [1.0, 2.0, 6.0],
            "knn_distance": [0.1, 0.2, 0.6],
            "knn_dot": [1.0, 1.0, 4.0],
        }
    )
    bins = [(0, 2), (2, 5), (5, None)]
    table = bins_table(words, queries, bins)
    assert table["vectors"].tolist() == ["static"] * 3 + ["occurrences"] * 3
    assert table["bin"].tolist() == ["0–2", "2–5", "5+"] * 2
    assert table["n"].tolist() == [2, 0, 1, 3, 0, 0]
    assert table["n_words"].tolist() == [2, 0, 1, 2, 0, 0]
    np.testing.assert_allclose(table["norm"], [2.0, np.nan, 10.0, 3.0, np.nan, np.nan])
    np.testing.assert_allclose(table["knn_distance"], [1.0, np.nan, 4.0, 0.3, np.nan, np.nan])
    np.testing.assert_allclose(table["knn_dot"], [3.0, np.nan, 6.0, 2.0, np.nan, np.nan])
    assert table["mean_direction_cosine"].iloc[0] == pytest.approx(0.8)
    assert table["mean_direction_cosine"].iloc[3:].isna().all()
    assert table["rank_high"].isna().tolist() == [False, False, True] * 2


# Cone projection


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cone_first_axis_carries_the_common_direction(sign):
    rng = np.random.default_rng(7)
    direction = rng.standard_normal(10)
    direction /= np.linalg.norm(direction)
    lengths = rng.uniform(2.0, 4.0, size=500)
    vectors = sign * (lengths[:, None] * direction + 0.2 * rng.standard_normal((500, 10)))
    vectors[3] = np.nan
    occurrences, vocab = _layer(rng.integers(0, 30, size=500))
    cone = cone_projection(vectors, occurrences, vocab, DegenerationSettings(cone_points=100))
    assert len(cone) == 100 and 3 not in set(cone["occurrence_id"])
    assert cone["explained_x"].iloc[0] > 0.9
    assert 0 < cone["explained_y"].iloc[0] < cone["explained_x"].iloc[0]
    assert cone["x"].mean() >= 0 and cone["y"].mean() >= 0
    np.testing.assert_allclose(
        cone["x"], np.abs(vectors[cone["occurrence_id"]] @ direction), rtol=0.1
    )
    word_id = occurrences["word_id"].to_numpy()[cone["occurrence_id"]]
    np.testing.assert_array_equal(cone["word_id"], word_id)
    np.testing.assert_array_equal(cone["frequency_rank"], vocab["frequency_rank"][word_id])


def test_cone_sample_is_seeded():
    rng = np.random.default_rng(8)
    vectors = rng.standard_normal((200, 4)) + 1.0
    occurrences, vocab = _layer(rng.integers(0, 10, size=200))
    settings = DegenerationSettings(cone_points=20)
    pd.testing.assert_frame_equal(
        cone_projection(vectors, occurrences, vocab, settings),
        cone_projection(vectors, occurrences, vocab, settings),
    )


# Figures


@pytest.fixture(scope="module")
def layers():
    """Word, query, table and cone results for two small layers."""
    rng = np.random.default_rng(9)
    settings = DegenerationSettings(occurrence_queries=40, cone_points=60)
    words_by_layer, cones, tables = {}, {}, []
    for layer in (0, 1):
        vectors, word_id = _planted_layer(rng, n_words=15)
        occurrences, vocab = _layer(word_id)
        words = word_degeneration(vectors, occurrences, vocab, settings)
        queries = occurrence_degeneration(vectors, occurrences, vocab, settings)
        bins = rank_bins(len(vocab), DegenerationSettings(reference_vocabulary=None))
        tables.append(bins_table(words, queries, bins).assign(layer=layer))
        words_by_layer[layer] = words
        cones[layer] = cone_projection(vectors, occurrences, vocab, settings)
    return words_by_layer, pd.concat(tables, ignore_index=True), cones


@pytest.mark.parametrize("plot", ["norm_by_rank", "knn_by_bin", "cone"])
def test_figures_write_png_and_pdf(tmp_path, layers, plot):
    words_by_layer, table, cones = layers
    data = {"norm_by_rank": words_by_layer, "knn_by_bin": table, "cone": cones}[plot]
    outputs = [tmp_path / f"{plot}.png", tmp_path / f"{plot}.pdf"]
    more = {"neighbours": 3} if plot == "knn_by_bin" else {}
    getattr(degeneration_figures, f"plot_{plot}")(data, outputs, title="model · none", **more)
    image = matplotlib.image.imread(outputs[0])
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert outputs[1].read_bytes().startswith(b"%PDF")
    written = [*outputs, *(figure_sidecar(output) for output in outputs)]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(p.name for p in written)
    for output in outputs:  # each figure beside the digest of its bytes
        assert read_json(figure_sidecar(output))[TABLE_DIGEST] == sha256_file(output)


def test_mean_vector_norms_lean_on_frequency_even_without_structure():
    """Averaging n noisy vectors shrinks the mean's norm as n grows, so frequent words'
    mean vectors look nearer the origin in pure noise; their occurrences' norms do not."""
    rng = np.random.default_rng(8)
    counts = np.maximum(5, (2000 / np.arange(1, 81)).astype(int))  # Zipf-like, 80 words
    word_id = rng.permutation(np.repeat(np.arange(80), counts))
    vectors = rng.standard_normal((len(word_id), 64)) + 0.1
    occurrences, vocab = _layer(word_id)
    words = word_degeneration(vectors, occurrences, vocab, DegenerationSettings())
    correlations = frequency_correlations(words)
    assert correlations["norm~frequency"] < -0.8
    assert abs(correlations["occurrence_norm~frequency"]) < 0.3


def test_knn_figure_leaves_out_empty_bins_says_so_and_labels_each_scale(monkeypatch):
    """The rarest bin holds no indexed word in a real corpus: it is left out of the axis
    and named under it by its ranks, never drawn as an empty slot; each panel has its own
    y-label, naming k."""
    bins = ["0–10", "10–50", "50–100", "100+"]
    table = pd.DataFrame(
        [
            {
                "bin": label,
                "rank_low": [0, 10, 50, 100][position],
                "rank_high": [10, 50, 100, pd.NA][position],
                "vectors": vectors,
                "layer": layer,
                "knn_distance": np.nan if label == "100+" else 1.0 + position + layer,
            }
            for position, label in enumerate(bins)
            for vectors in ("static", "occurrences")
            for layer in (0, 1)
        ]
    )
    kept = []
    monkeypatch.setattr(
        degeneration_figures, "save_figure", lambda figure, outputs, source: kept.append(figure)
    )
    degeneration_figures.plot_knn_by_bin(table, [], 5, title="model, transform none")
    (figure,) = kept
    for panel in figure.axes:
        assert [tick.get_text() for tick in panel.get_xticklabels()] == ["1–10", "11–50", "51–100"]
        assert panel.get_xlabel().endswith("(no words in ranks 101+)")
        assert panel.get_ylabel() == "mean L2 distance\nto the k = 5 nearest"
    degeneration_figures.plt.close(figure)


def test_norm_figure_keeps_its_legend_off_the_panels(monkeypatch, layers):
    words_by_layer, _, _ = layers
    kept = []
    monkeypatch.setattr(
        degeneration_figures, "save_figure", lambda figure, outputs, source: kept.append(figure)
    )
    degeneration_figures.plot_norm_by_rank(words_by_layer, [], title="model, transform none")
    (figure,) = kept
    figure.canvas.draw()
    legend = figure.legends[0].get_window_extent()
    assert not any(panel.get_legend() for panel in figure.axes)
    for panel in figure.axes:
        if panel.get_visible():
            assert not legend.overlaps(panel.get_window_extent())
    degeneration_figures.plt.close(figure)
