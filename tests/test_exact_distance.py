"""The exact search by distance from float32 products proved in float64
(`geometry.exact_distance`): brute force's neighbours on rows float32 resolves and on rows
it cannot, and scikit-dimension's where both are exact."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("faiss")

from contextuality.geometry.exact_distance import exact_distance_neighbours  # noqa: E402


def brute_force(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair's float64 distance from the differences; each row's k nearest other
    rows by distance, then by row."""
    gaps = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=2)
    np.fill_diagonal(gaps, np.inf)
    columns = np.broadcast_to(np.arange(len(points)), gaps.shape)
    order = np.lexsort((columns, gaps), axis=1)[:, :k]
    return np.take_along_axis(gaps, order, 1), order


def _rows(kind: str) -> np.ndarray:
    random = np.random.default_rng(3)
    if kind == "gaussian":
        return random.standard_normal((1_200, 48))
    if kind == "far from the origin":  # the shift by the mean leaves them there
        sides = np.repeat([[1e3], [-1e3]], 600, axis=0) * random.standard_normal(48)
        return sides + 0.1 * random.standard_normal((1_200, 48))
    if kind == "tight clusters":  # distances under float32's rounding of the norms
        centres = np.repeat(random.standard_normal((12, 24)), 100, axis=0)
        return centres + 1e-5 * random.standard_normal((1_200, 24))
    if kind == "near ties":  # radii 10⁻⁹ apart about the first row, under float32's ulp
        directions = random.standard_normal((60, 48))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        radii = 1.0 + 1e-9 * random.permutation(60)
        return np.vstack([np.zeros(48), directions * radii[:, None]])
    if kind == "one far point":
        rows = random.standard_normal((1_200, 48))
        rows[7] = 1e4
        return rows
    return np.repeat(random.standard_normal((100, 16)), 12, axis=0)  # repeated rows


@pytest.mark.parametrize(
    "kind",
    [
        "gaussian",
        "far from the origin",
        "tight clusters",
        "near ties",
        "one far point",
        "repeated rows",
    ],
)
def test_the_neighbours_are_brute_force_s(kind):
    """Rows, order and float64 distances equal brute force's on rows float32 resolves and
    on rows it does not: neighbours 10⁻⁹ apart in distance, which float32 orders at random
    (that query searched again in float64)."""
    points = _rows(kind)
    distances, indices = exact_distance_neighbours(points, 10)
    expected_distances, expected = brute_force(points, 10)
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-9, atol=1e-12)


def test_a_query_float32_cannot_prove_is_searched_again(caplog):
    """Two clusters far from their mean, their spread far under float32's rounding of
    their norms, leave every query unproved: each is searched again in float64, and said
    so; Gaussian rows need none."""
    with caplog.at_level(logging.INFO, logger="contextuality.geometry.exact_distance"):
        exact_distance_neighbours(_rows("far from the origin"), 10)
    assert "1,200 of 1,200 points searched again in float64" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="contextuality.geometry.exact_distance"):
        exact_distance_neighbours(_rows("gaussian"), 10)
    assert "searched again" not in caplog.text


def test_one_far_point_leaves_the_other_queries_proved(caplog):
    """A point of norm 10⁴ among unit-scale rows widens no other query's bound: only it
    is searched again."""
    with caplog.at_level(logging.INFO, logger="contextuality.geometry.exact_distance"):
        exact_distance_neighbours(_rows("one far point"), 10)
    assert "1 of 1,200 points searched again" in caplog.text


def test_the_exact_search_agrees_with_scikit_dimension_s():
    """`index.euclidean_neighbours` without an index (this search, FAISS installed) finds
    scikit-dimension's neighbours and distances."""
    from skdim import get_nn

    from contextuality.geometry.index import euclidean_neighbours

    points = np.random.default_rng(4).random((2_000, 12)) @ np.random.default_rng(5).random(
        (12, 30)
    )
    distances, indices, recall = euclidean_neighbours(points, 8)
    expected_distances, expected = get_nn(points, k=8)
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-9)
    assert recall == 1.0


def test_every_point_a_candidate_needs_no_proof():
    """With fewer points than k + the spare candidates, every point is compared in
    float64: brute force's neighbours."""
    points = np.random.default_rng(6).standard_normal((12, 5))
    distances, indices = exact_distance_neighbours(points, 6)
    expected_distances, expected = brute_force(points, 6)
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-12)
