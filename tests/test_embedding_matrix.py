"""Tests for contextuality.measures.embedding_matrix: the token embedding matrices.

Each measure is checked on matrices built so that its value is known (rows along one
direction plus noise, orthonormal rows, prescribed singular values, norms that grow with
frequency), against a brute-force evaluation over every pair of rows, for the invariances
its definition implies, and for the input it refuses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contextuality.measures.embedding_matrix import (
    LAYER,
    ROW_COLUMNS,
    UNSEEN,
    EmbeddingMatrix,
    frequency_bins,
    frequency_ranks,
    matrix_rows,
    mean_direction_cosines,
    mean_pairwise_cosine,
    norm_frequency_correlation,
    norms_by_frequency,
    singular_spectrum,
)


def brute_force_mean_cosine(weights: np.ndarray) -> float:
    """The mean cosine over every ordered pair of distinct rows, pair by pair."""
    unit = weights / np.linalg.norm(weights, axis=1, keepdims=True)
    n = len(unit)
    return sum(unit[i] @ unit[j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1))


def random_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A random d×d orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def frequency_grown(rng: np.random.Generator, n: int = 200, d: int = 16):
    """Rows whose norm grows with their token's count (random directions), the counts, and
    the rows' norms; a quarter of the tokens unseen (count 0)."""
    counts = rng.integers(1, 1000, size=n).astype(float)
    counts[rng.choice(n, n // 4, replace=False)] = 0
    directions = rng.standard_normal((n, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    norms = 1.0 + np.log1p(counts)
    return directions * norms[:, None], counts


def test_rows_along_one_direction_with_small_noise_have_the_known_anisotropy():
    # Rows c·e + ε with ε ~ N(0, σ²I): cos ≈ c² / (c² + dσ²) for large d.
    rng = np.random.default_rng(0)
    d, sigma = 400, 0.05
    shared = np.zeros(d)
    shared[0] = 1.0
    weights = shared + sigma * rng.standard_normal((300, d))
    expected = 1.0 / (1.0 + d * sigma**2)
    assert mean_pairwise_cosine(weights) == pytest.approx(expected, abs=0.02)


def test_orthonormal_rows_have_no_anisotropy():
    rows = random_rotation(np.random.default_rng(1), 12)
    assert mean_pairwise_cosine(rows) == pytest.approx(0.0, abs=1e-12)


def test_the_exact_mean_cosine_equals_the_mean_over_every_pair():
    weights = np.random.default_rng(2).standard_normal((25, 6)) + 0.7
    assert mean_pairwise_cosine(weights) == pytest.approx(brute_force_mean_cosine(weights))


def test_zero_rows_are_left_out_of_the_cosines():
    weights = np.random.default_rng(3).standard_normal((10, 4)) + 1.0
    with_zero = np.vstack([weights, np.zeros((2, 4))])
    assert mean_pairwise_cosine(with_zero) == pytest.approx(brute_force_mean_cosine(weights))
    cosines = mean_direction_cosines(with_zero)
    assert np.isnan(cosines[-2:]).all() and np.isfinite(cosines[:-2]).all()


def test_the_spectrum_gives_the_shares_of_known_singular_values():
    rng = np.random.default_rng(4)
    singular_values = np.array([5.0, 3.0, 2.0, 1.0, 0.5])
    left, _ = np.linalg.qr(rng.standard_normal((40, 5)))
    weights = left * singular_values @ random_rotation(rng, 5)
    expected = singular_values**2 / np.sum(singular_values**2)
    assert np.allclose(singular_spectrum(weights, centered=False), expected)


def test_the_centered_spectrum_is_the_covariance_s():
    weights = np.random.default_rng(5).standard_normal((60, 7)) * np.arange(1, 8) + 3.0
    eigenvalues = np.linalg.eigvalsh(np.cov(weights, rowvar=False))[::-1]
    assert np.allclose(singular_spectrum(weights, centered=True), eigenvalues / eigenvalues.sum())


def test_a_common_offset_fills_the_uncentered_top_share_and_not_the_centered_one():
    weights = np.random.default_rng(6).standard_normal((500, 8)) + 10.0
    assert singular_spectrum(weights, centered=False)[0] > 0.95
    assert singular_spectrum(weights, centered=True)[0] < 0.3


def test_the_spectrum_of_a_wide_matrix_has_one_share_per_row():
    shares = singular_spectrum(np.random.default_rng(7).standard_normal((3, 10)), centered=False)
    assert shares.shape == (3,) and shares.sum() == pytest.approx(1.0)


def test_rows_in_a_cone_point_along_its_axis():
    rng = np.random.default_rng(8)
    axis = np.zeros(10)
    axis[3] = 1.0
    cone = axis * 4.0 + 0.1 * rng.standard_normal((100, 10))
    assert np.nanmean(mean_direction_cosines(cone)) > 0.99
    assert np.nanmean(mean_direction_cosines(rng.standard_normal((100, 10)))) < 0.5


def test_norms_that_grow_with_frequency_correlate_positively_and_inverted_negatively():
    weights, counts = frequency_grown(np.random.default_rng(9))
    assert norm_frequency_correlation(weights, counts) > 0.9
    shrunk = weights / np.linalg.norm(weights, axis=1, keepdims=True) ** 2
    assert norm_frequency_correlation(shrunk, counts) < -0.9


def test_unseen_tokens_do_not_enter_the_correlation():
    weights, counts = frequency_grown(np.random.default_rng(10))
    unseen = counts == 0
    changed = weights.copy()
    changed[unseen] *= np.random.default_rng(11).uniform(0.1, 100, size=unseen.sum())[:, None]
    assert norm_frequency_correlation(changed, counts) == norm_frequency_correlation(
        weights, counts
    )


def test_frequency_ranks_share_the_best_rank_among_ties_and_zero_for_unseen():
    counts = np.array([5, 0, 9, 5, 1, 9, 0])
    assert frequency_ranks(counts).tolist() == [3, 0, 1, 3, 5, 1, 0]


def test_frequency_bins_cover_every_token_once_by_rank():
    counts = np.r_[np.arange(30, 0, -1), np.zeros(5)]
    bins = frequency_bins(counts, edges=(10, 20))
    assert [label for label, *_ in bins] == ["1–10", "11–20", "21+", UNSEEN]
    masks = np.array([mask for *_, mask in bins])
    assert (masks.sum(axis=0) == 1).all()
    assert masks[0].nonzero()[0].tolist() == list(range(10))
    assert masks[3].nonzero()[0].tolist() == list(range(30, 35))


def test_the_norm_table_gives_each_bin_s_mean_norm():
    weights, counts = frequency_grown(np.random.default_rng(12))
    table = norms_by_frequency(weights, counts, edges=(20, 80))
    ranks = frequency_ranks(counts)
    norms = np.linalg.norm(weights, axis=1)
    top = (ranks >= 1) & (ranks <= 20)
    assert table["n_tokens"].sum() == len(weights)
    assert table.loc[0, "mean_norm"] == pytest.approx(norms[top].mean())
    assert table.loc[table["bin"] == UNSEEN, "mean_count"].item() == 0
    seen = table[table["bin"] != UNSEEN]
    assert seen["mean_norm"].is_monotonic_decreasing  # frequent tokens have longer rows here


def measured(weights: np.ndarray, counts: np.ndarray) -> pd.Series:
    """The numeric measures of `matrix_rows` for one corpus, as a Series."""
    row = matrix_rows(EmbeddingMatrix("m", "input", weights, True), {"corpus": counts})
    return row.drop(columns=["model", "layer", "matrix", "tied", "frequency_corpus"]).iloc[0]


def test_the_measures_do_not_depend_on_the_order_of_the_rows():
    weights, counts = frequency_grown(np.random.default_rng(13), n=120, d=8)
    order = np.random.default_rng(14).permutation(len(weights))
    assert np.allclose(measured(weights, counts), measured(weights[order], counts[order]))
    table = norms_by_frequency(weights, counts, edges=(30,))
    permuted = norms_by_frequency(weights[order], counts[order], edges=(30,))
    assert np.allclose(table[["mean_norm", "cone_cosine"]], permuted[["mean_norm", "cone_cosine"]])


def test_scaling_every_row_leaves_every_measure_but_the_norm_and_i_w():
    weights, counts = frequency_grown(np.random.default_rng(15), n=120, d=8)
    original, scaled = measured(weights, counts), measured(3.0 * weights, counts)
    assert scaled["mean_norm"] == pytest.approx(3.0 * original["mean_norm"])
    invariant = original.index.difference(["mean_norm", "partition_ratio"])
    assert np.allclose(original[invariant], scaled[invariant])


def test_the_table_has_a_row_per_corpus_with_the_seen_tokens_of_each():
    weights, counts = frequency_grown(np.random.default_rng(16), n=80, d=6)
    fewer = np.where(np.arange(80) < 10, counts, 0)
    table = matrix_rows(
        EmbeddingMatrix("model", "output", weights, None), {"big": counts, "small": fewer}
    )
    assert list(table.columns) == list(ROW_COLUMNS)
    assert table["frequency_corpus"].tolist() == ["big", "small"]
    assert (table["layer"] == LAYER).all() and table["tied"].isna().all()
    assert table["n_seen"].tolist() == [int((counts > 0).sum()), int((fewer > 0).sum())]
    seen = weights[fewer > 0]
    assert table.loc[1, "anisotropy_seen"] == pytest.approx(brute_force_mean_cosine(seen))
    assert table.loc[0, "anisotropy"] == table.loc[1, "anisotropy"]


@pytest.mark.parametrize(
    ("weights", "counts", "message"),
    [
        (np.ones((4, 3)), np.ones(5), "one per row"),
        (np.ones((4, 3)), np.array([1.0, -1.0, 0.0, 2.0]), "non-negative"),
        (np.ones((1, 3)), np.ones(1), "at least 2 rows"),
        (np.ones(6), np.ones(6), "at least 2 rows"),
        (np.full((3, 2), np.nan), np.ones(3), "finite"),
    ],
)
def test_bad_input_is_refused_with_a_reason(weights, counts, message):
    with pytest.raises(ValueError, match=message):
        norm_frequency_correlation(weights, counts)
    with pytest.raises(ValueError, match=message):
        matrix_rows(EmbeddingMatrix("m", "input", weights, False), {"corpus": counts})


def test_fewer_than_two_nonzero_rows_have_no_mean_cosine():
    with pytest.raises(ValueError, match="2 nonzero rows"):
        mean_pairwise_cosine(np.array([[1.0, 0.0], [0.0, 0.0]]))


def test_a_matrix_of_zeros_has_no_spectrum_and_an_unknown_matrix_name_is_refused():
    with pytest.raises(ValueError, match="no nonzero singular value"):
        singular_spectrum(np.zeros((4, 3)), centered=False)
    with pytest.raises(ValueError, match="input"):
        EmbeddingMatrix("m", "hidden", np.ones((2, 2)), True)
    with pytest.raises(ValueError, match="at least one corpus"):
        matrix_rows(EmbeddingMatrix("m", "input", np.eye(3), True), {})
