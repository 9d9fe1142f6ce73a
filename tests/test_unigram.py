"""The unigram direction of an output layer and the cosines of a layer's rows with it
(`contextuality.measures.unigram`), on inputs built so that the answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from contextuality.measures.unigram import (
    centered_log_frequencies,
    direction_cosines,
    unigram_direction,
)


def _orthonormal_columns_orthogonal_to_ones(vocab: int, dim: int, seed: int) -> np.ndarray:
    """E (vocab, dim) with EᵀE = I and Σ_t E_t = 0: every E u has zero mean over tokens."""
    matrix = np.random.default_rng(seed).standard_normal((vocab, dim))
    matrix -= matrix.mean(axis=0)
    return np.linalg.qr(matrix)[0]


def _counts_whose_log_frequencies_are(scores: np.ndarray, shift: float = 6.0) -> np.ndarray:
    """Counts c with log(c + 1) = scores + shift: centered, their log-frequencies are the
    scores minus their mean."""
    return np.exp(scores + shift) - 1.0


def test_the_unigram_direction_is_the_hidden_state_that_reproduces_the_log_frequencies():
    embeddings = _orthonormal_columns_orthogonal_to_ones(50, 6, seed=0)
    hidden = np.array([0.5, -1.0, 0.25, 0.0, 0.75, -0.5])
    counts = _counts_whose_log_frequencies_are(embeddings @ hidden)
    direction = unigram_direction(embeddings, counts)
    np.testing.assert_allclose(direction, hidden / np.linalg.norm(hidden), atol=1e-12)
    # Along it, at the right length, the output layer predicts the smoothed unigram
    # distribution exactly.
    scores = embeddings @ (np.linalg.norm(hidden) * direction)
    predicted = np.exp(scores - scores.max())
    np.testing.assert_allclose(predicted / predicted.sum(), (counts + 1) / np.sum(counts + 1))


def test_the_unigram_direction_weights_each_output_embedding_by_its_centered_log_frequency():
    embeddings = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    counts = np.array([0.0, np.e - 1.0, np.e**2 - 1.0])  # log(c + 1) = 0, 1, 2
    np.testing.assert_allclose(centered_log_frequencies(counts), [-1.0, 0.0, 1.0])
    # −1·(1, 0) + 0·(0, 1) + 1·(1, 1) = (0, 1): Eᵀw, not the least-squares E⁺w.
    np.testing.assert_allclose(unigram_direction(embeddings, counts), [0.0, 1.0], atol=1e-15)


def test_scaling_the_smoothed_counts_leaves_the_direction_but_scaling_the_raw_counts_does_not():
    rng = np.random.default_rng(1)
    embeddings = rng.standard_normal((40, 5))
    counts = rng.integers(0, 30, size=40).astype(float)
    counts[:5] = 0.0  # unseen tokens, where the +1 matters most
    direction = unigram_direction(embeddings, counts)
    np.testing.assert_allclose(unigram_direction(embeddings, 7.0 * (counts + 1) - 1), direction)
    assert not np.allclose(unigram_direction(embeddings, 7.0 * counts), direction, atol=1e-3)


def test_a_vector_added_to_every_output_embedding_leaves_the_direction_unchanged():
    rng = np.random.default_rng(2)
    embeddings = rng.standard_normal((30, 4))
    counts = rng.integers(0, 100, size=30)
    shifted = embeddings + np.array([10.0, -3.0, 0.5, 2.0])
    np.testing.assert_allclose(
        unigram_direction(shifted, counts), unigram_direction(embeddings, counts), atol=1e-12
    )


def _rows(mean: np.ndarray, spread: np.ndarray, n: int = 20) -> np.ndarray:
    """n rows mean + a_i · spread, the a_i centered and not all zero."""
    steps = np.linspace(-1.0, 1.0, n)
    return mean + steps[:, None] * spread


def test_rows_along_the_direction_give_cosine_one_and_its_opposite_minus_one():
    direction = np.array([1.0, 2.0, -2.0]) / 3.0
    along = direction * 4.0
    cosines = direction_cosines(_rows(3.0 * along, along), direction)
    assert cosines.mean == pytest.approx(1.0) and cosines.first_component == pytest.approx(1.0)
    opposite = direction_cosines(_rows(-3.0 * along, along), direction)
    assert opposite.mean == pytest.approx(-1.0) and opposite.first_component == pytest.approx(1.0)


def test_rows_orthogonal_to_the_direction_give_cosine_zero():
    direction = np.array([1.0, 0.0, 0.0, 0.0])
    cosines = direction_cosines(
        _rows(np.array([0, 5.0, 0, 0]), np.array([0, 0, 1.0, 1.0])), direction
    )
    assert cosines.mean == pytest.approx(0.0, abs=1e-12)
    assert cosines.first_component == pytest.approx(0.0, abs=1e-12)


def test_the_mean_and_the_first_principal_direction_are_told_apart():
    direction = np.array([0.0, 1.0, 0.0])
    mean_along = direction_cosines(_rows(np.array([0, 2.0, 0]), np.array([3.0, 0, 0])), direction)
    assert mean_along == pytest.approx((1.0, 0.0), abs=1e-12)
    spread_along = direction_cosines(_rows(np.array([2.0, 0, 0]), np.array([0, 3.0, 0])), direction)
    assert spread_along == pytest.approx((0.0, 1.0), abs=1e-12)


def test_the_first_principal_direction_has_no_sign_and_matches_an_svd():
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((200, 8)) * np.array([5.0, 1, 1, 1, 1, 1, 1, 1]) + 2.0
    direction = rng.standard_normal(8)
    cosines = direction_cosines(rows, direction)
    top = np.linalg.svd(rows - rows.mean(axis=0), full_matrices=False)[2][0]
    expected = abs(top @ direction) / np.linalg.norm(direction)
    assert cosines.first_component == pytest.approx(expected, rel=1e-9)
    mirrored = 2 * rows.mean(axis=0) - rows  # the centered rows negated
    assert direction_cosines(mirrored, direction).first_component == pytest.approx(expected)
    flipped = direction_cosines(rows, -direction)
    assert flipped.mean == pytest.approx(-cosines.mean)
    assert flipped.first_component == pytest.approx(cosines.first_component)


def test_identical_rows_have_no_first_principal_direction_and_zero_mean_rows_no_mean():
    direction = np.array([1.0, 1.0])
    same = direction_cosines(np.tile([0.1, 0.7], (9, 1)), direction)
    assert same.mean == pytest.approx(0.8 / (np.hypot(0.1, 0.7) * np.sqrt(2.0)))
    assert np.isnan(same.first_component)
    centered = direction_cosines(np.array([[1.0, 0.0], [-1.0, 0.0]]), direction)
    assert np.isnan(centered.mean) and centered.first_component == pytest.approx(np.sqrt(0.5))


@pytest.mark.parametrize(
    ("embeddings", "counts", "message"),
    [
        (np.ones((4, 2)), np.arange(3), "one count per row"),
        (np.ones(4), np.arange(4), r"expected \(V, d\)"),
        (np.ones((4, 2)), np.array([1.0, -1.0, 2.0, 3.0]), "non-negative"),
        (np.eye(4, 2), np.full(4, 5.0), "no direction"),
        (np.ones((1, 2)), np.array([3.0]), "V ≥ 2"),
    ],
)
def test_unigram_direction_refuses_what_has_no_direction(embeddings, counts, message):
    with pytest.raises(ValueError, match=message):
        unigram_direction(embeddings, counts)


@pytest.mark.parametrize(
    ("rows", "direction", "message"),
    [
        (np.ones((1, 3)), np.ones(3), "at least 2 rows"),
        (np.ones(3), np.ones(3), "at least 2 rows"),
        (np.ones((4, 3)), np.ones(2), r"expected shape \(3,\)"),
        (np.ones((4, 3)), np.zeros(3), "no direction"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), np.ones(2), "finite"),
    ],
)
def test_direction_cosines_refuses_rows_or_directions_it_cannot_compare(rows, direction, message):
    with pytest.raises(ValueError, match=message):
        direction_cosines(rows, direction)
