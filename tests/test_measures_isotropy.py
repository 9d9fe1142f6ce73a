"""Tests for contextuality.measures.isotropy: IsoScore, IsoScore*, I(W), effective rank,
rogue dimensions.

Each score is checked against cases whose answer is known in closed form (isotropic data,
a line, k equal-variance dimensions, a Gaussian's moment generating function), against a
brute-force evaluation written here from the definitions, and for the invariances the
definitions imply.
"""

from __future__ import annotations

import numpy as np
import pytest

from contextuality.measures.isotropy import (
    RogueDimensions,
    covariance_eigenvalues,
    effective_rank,
    isoscore,
    isoscore_from_eigenvalues,
    isoscore_star,
    log_partition_function,
    partition_ratio,
    rogue_dimensions,
)

# Variances of the rotated anisotropic Gaussian used by the I(W) tests.
GAUSSIAN_VARIANCES = np.array([2.0, 1.0, 0.5, 0.25])


def random_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A uniformly random d×d orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def rotated_gaussian(rng: np.random.Generator, n: int) -> np.ndarray:
    """n rows from N(0, R·diag(GAUSSIAN_VARIANCES)·Rᵀ) for a random rotation R."""
    d = len(GAUSSIAN_VARIANCES)
    principal = rng.standard_normal((n, d)) * np.sqrt(GAUSSIAN_VARIANCES)
    return principal @ random_rotation(rng, d).T


def unit_directions(rng: np.random.Generator, k: int, d: int) -> np.ndarray:
    """k random unit vectors in d dimensions, as rows."""
    directions = rng.standard_normal((k, d))
    return directions / np.linalg.norm(directions, axis=1, keepdims=True)


def points_on_a_line(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """n points on a random line through a random offset, no noise."""
    return rng.standard_normal(n)[:, None] * unit_directions(rng, 1, d) + rng.standard_normal(d)


@pytest.fixture(scope="module")
def gaussian() -> np.ndarray:
    return rotated_gaussian(np.random.default_rng(3), 200_000)


# --------------------------------------------------------------------------------------
# IsoScore
# --------------------------------------------------------------------------------------


def test_isoscore_of_isotropic_gaussian_is_near_one():
    vectors = np.random.default_rng(0).standard_normal((20_000, 10))
    assert 0.97 < isoscore(vectors) <= 1.0


def test_isoscore_of_a_line_is_zero():
    vectors = points_on_a_line(np.random.default_rng(1), 500, 6)
    assert isoscore(vectors) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(("d", "k"), [(10, 3), (8, 8), (12, 5), (5, 2)])
def test_isoscore_of_k_equal_variance_dimensions_matches_closed_form(d, k):
    # ±e_i for i < k, rotated: covariance with k equal eigenvalues and d − k zeros.
    axes = np.eye(d)[:k]
    vectors = np.concatenate([axes, -axes]) @ random_rotation(np.random.default_rng(d * k), d)
    normalized = np.concatenate([np.full(k, np.sqrt(d / k)), np.zeros(d - k)])
    defect = np.linalg.norm(normalized - 1) / np.sqrt(2 * (d - np.sqrt(d)))
    used = (d - defect**2 * (d - np.sqrt(d))) ** 2 / d**2
    expected = (d * used - 1) / (d - 1)
    assert expected == pytest.approx((k - 1) / (d - 1), abs=1e-12)
    assert isoscore(vectors) == pytest.approx(expected, abs=1e-9)


def test_isoscore_is_invariant_to_rotation_translation_and_scale():
    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((2_000, 6)) * np.array([3.0, 2.0, 1.0, 1.0, 0.5, 0.1])
    score = isoscore(vectors)
    assert 0.1 < score < 0.9
    assert isoscore(vectors @ random_rotation(rng, 6)) == pytest.approx(score, abs=1e-9)
    assert isoscore(vectors + 50 * rng.standard_normal(6)) == pytest.approx(score, abs=1e-9)
    assert isoscore(3.7 * vectors) == pytest.approx(score, abs=1e-9)


@pytest.mark.parametrize(
    "vectors",
    [np.ones((1, 4)), np.arange(5.0)[:, None], np.tile([1.0, 2.0, 3.0], (6, 1))],
    ids=["one row", "one dimension", "no variance"],
)
def test_isoscore_refuses_degenerate_data(vectors):
    with pytest.raises(ValueError):
        isoscore(vectors)


def test_covariance_eigenvalues_are_descending_variances_of_principal_components():
    rng = np.random.default_rng(4)
    variances = np.array([4.0, 1.0, 0.25])
    vectors = rng.standard_normal((50_000, 3)) * np.sqrt(variances) @ random_rotation(rng, 3)
    eigenvalues = covariance_eigenvalues(vectors)
    assert eigenvalues.dtype == np.float64
    np.testing.assert_allclose(eigenvalues, variances, rtol=0.03)
    centered = vectors - vectors.mean(axis=0)
    np.testing.assert_allclose(eigenvalues.sum(), np.sum(centered**2) / len(vectors))


# --------------------------------------------------------------------------------------
# IsoScore*
# --------------------------------------------------------------------------------------


def test_isoscore_star_without_shrinkage_is_isoscore_of_the_sample():
    rng = np.random.default_rng(5)
    sample = rng.standard_normal((100, 8)) * np.linspace(0.2, 2.0, 8)
    target = np.diag(np.linspace(1.0, 3.0, 8))
    assert isoscore_star(sample, 0.0, target) == pytest.approx(isoscore(sample), abs=1e-12)


def test_isoscore_star_with_full_shrinkage_is_isoscore_of_the_target():
    rng = np.random.default_rng(6)
    sample = rng.standard_normal((100, 8))
    mixing = rng.standard_normal((8, 8)) * np.linspace(0.1, 1.0, 8)
    target = mixing @ mixing.T
    expected = isoscore_from_eigenvalues(np.linalg.eigvalsh(target))
    assert abs(expected - isoscore(sample)) > 0.1
    assert isoscore_star(sample, 1.0, target) == pytest.approx(expected, abs=1e-12)


def test_isoscore_star_corrects_a_small_isotropic_sample():
    rng = np.random.default_rng(7)
    target = np.cov(rng.standard_normal((50_000, 40)), rowvar=False, bias=True)
    sample = rng.standard_normal((50, 40))
    raw = isoscore(sample)
    shrunk = isoscore_star(sample, 0.5, target)
    assert raw < 0.7  # Marchenko–Pastur spread: isotropic data look anisotropic
    assert shrunk > raw + 0.15


@pytest.mark.parametrize("shrinkage", [-0.1, 1.1, np.nan])
def test_isoscore_star_refuses_shrinkage_outside_unit_interval(shrinkage):
    sample = np.random.default_rng(8).standard_normal((20, 3))
    with pytest.raises(ValueError):
        isoscore_star(sample, shrinkage, np.eye(3))


@pytest.mark.parametrize("target", [np.eye(4), np.ones(3), np.ones((3, 4))])
def test_isoscore_star_refuses_target_of_wrong_shape(target):
    sample = np.random.default_rng(9).standard_normal((20, 3))
    with pytest.raises(ValueError):
        isoscore_star(sample, 0.5, target)


# --------------------------------------------------------------------------------------
# Partition-function ratio I(W)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_rows", [30, 100_000], ids=["small", "several blocks"])
def test_log_partition_function_matches_direct_evaluation(n_rows):
    rng = np.random.default_rng(10)
    vectors = 0.5 * rng.standard_normal((n_rows, 5)) + 0.3
    directions = rng.standard_normal((100, 5))
    expected = np.log(np.sum(np.exp(vectors @ directions.T), axis=0))
    np.testing.assert_allclose(
        log_partition_function(vectors, directions), expected, rtol=1e-12, atol=1e-12
    )


def test_partition_ratio_of_gaussian_follows_its_moment_generating_function(gaussian):
    # Z(c)/n ≈ E exp(cᵀv) = exp(cᵀΣc/2), extreme along the eigenvectors of Σ.
    expected = np.exp((GAUSSIAN_VARIANCES.min() - GAUSSIAN_VARIANCES.max()) / 2)
    assert partition_ratio(gaussian) == pytest.approx(expected, rel=0.03)


def test_partition_ratio_from_eigenvector_rows_would_differ(gaussian):
    _, eigenvectors = np.linalg.eigh(gaussian.T @ gaussian)
    rows_taken = np.concatenate([eigenvectors, -eigenvectors])
    log_z = log_partition_function(gaussian, rows_taken)
    wrong = np.exp(log_z.min() - log_z.max())
    assert abs(wrong - partition_ratio(gaussian)) > 0.05


def test_eigenvectors_are_the_extremes_of_the_partition_function():
    rng = np.random.default_rng(11)
    vectors = rotated_gaussian(rng, 2_000)
    _, eigenvectors = np.linalg.eigh(vectors.T @ vectors)
    at_eigenvectors = log_partition_function(
        vectors, np.concatenate([eigenvectors.T, -eigenvectors.T])
    )
    at_random = log_partition_function(vectors, unit_directions(rng, 20_000, vectors.shape[1]))
    tolerance = 0.01  # log Z is not exactly quadratic in c; its range here is about 0.9
    assert at_random.max() <= at_eigenvectors.max() + tolerance
    assert at_random.min() >= at_eigenvectors.min() - tolerance


def test_partition_ratio_takes_both_signs_of_each_eigenvector():
    # Rows m + N(0, I): Z(c)/n ≈ exp(cᵀm + 1/2), extreme at c = ±m/‖m‖, the top eigenvector.
    rng = np.random.default_rng(22)
    mean = np.array([0.6, -0.8, 0.0])
    vectors = mean + rng.standard_normal((100_000, 3))
    ratio = partition_ratio(vectors)
    assert ratio == pytest.approx(np.exp(-2 * np.linalg.norm(mean)), rel=0.05)
    assert partition_ratio(-vectors) == pytest.approx(ratio, rel=1e-9)


def test_partition_ratio_of_isotropic_data_is_near_one():
    vectors = np.random.default_rng(12).standard_normal((100_000, 4))
    assert 0.95 < partition_ratio(vectors) <= 1.0


def test_partition_function_of_huge_vectors_does_not_overflow():
    rng = np.random.default_rng(13)
    vectors = 1e4 * rng.standard_normal((1_000, 4))
    directions = unit_directions(rng, 8, 4)
    with np.errstate(over="raise", invalid="raise"):
        log_z = log_partition_function(vectors, directions)
        ratio = partition_ratio(vectors)
    largest_projection = (vectors @ directions.T).max(axis=0)
    assert np.all(log_z >= largest_projection)
    assert np.all(log_z <= largest_projection + np.log(len(vectors)))
    assert np.isfinite(ratio)
    assert 0.0 <= ratio <= 1.0


# --------------------------------------------------------------------------------------
# Effective rank
# --------------------------------------------------------------------------------------


def test_effective_rank_of_isotropic_data_is_near_dimension():
    vectors = np.random.default_rng(14).standard_normal((20_000, 8))
    assert 7.5 < effective_rank(vectors) <= 8.0


def test_effective_rank_of_a_line_is_one():
    vectors = points_on_a_line(np.random.default_rng(15), 300, 8)
    assert effective_rank(vectors) == pytest.approx(1.0, abs=1e-6)


def test_effective_rank_matches_brute_force():
    rng = np.random.default_rng(16)
    vectors = rng.standard_normal((300, 6)) * np.array([5.0, 2.0, 1.0, 0.5, 0.1, 0.01]) + 4.0
    singular_values = np.linalg.svd(vectors - vectors.mean(axis=0), compute_uv=False)
    expected = 1.0
    for share in singular_values / singular_values.sum():
        if share > 0:
            expected *= share**-share  # exp(−Σ p log p) = Π p^−p
    assert effective_rank(vectors) == pytest.approx(expected, rel=1e-12)


def test_effective_rank_refuses_data_without_variance():
    with pytest.raises(ValueError):
        effective_rank(np.tile([1.0, -2.0, 0.5], (10, 1)))


# --------------------------------------------------------------------------------------
# Rogue dimensions
# --------------------------------------------------------------------------------------


def random_sentences(
    rng: np.random.Generator, sizes: list[int], d: int, offset: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows (Σsizes, d) of Gaussian vectors plus `offset`, and each sentence's start."""
    vectors = rng.standard_normal((sum(sizes), d)) + offset
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), starts


def test_rogue_dimensions_match_brute_force_over_pairs():
    rng = np.random.default_rng(17)
    sizes = [3, 1, 5, 2, 4, 1, 3]
    d = 6
    unit, starts = random_sentences(rng, sizes, d, offset=np.linspace(0.0, 1.5, d))
    sentence = np.repeat(np.arange(len(sizes)), sizes)
    products = []
    for i in range(len(unit)):
        for j in range(len(unit)):
            if sentence[i] != sentence[j]:
                products.append(unit[i] * unit[j])
    per_dimension = np.mean(products, axis=0)

    result = rogue_dimensions(unit, starts, top=d)
    assert result.total == pytest.approx(per_dimension.sum(), abs=1e-12)
    assert sorted(result.dimensions) == list(range(d))
    np.testing.assert_allclose(
        result.contributions, per_dimension[list(result.dimensions)], atol=1e-12
    )
    assert list(result.contributions) == sorted(result.contributions, reverse=True)


def test_planted_rogue_dimension_is_found_first():
    rng = np.random.default_rng(18)
    offset = np.zeros(16)
    offset[7] = 10.0
    unit, starts = random_sentences(rng, [4] * 100, 16, offset)
    result = rogue_dimensions(unit, starts)
    assert result.dimensions[0] == 7
    assert len(result.dimensions) == 3
    assert result.share(1) > 0.9


def test_share_is_top_contributions_over_total():
    rng = np.random.default_rng(19)
    unit, starts = random_sentences(rng, [5] * 20, 8, offset=np.linspace(0.0, 1.0, 8))
    result = rogue_dimensions(unit, starts, top=4)
    for k in range(1, 5):
        expected = sum(result.contributions[:k]) / result.total
        assert result.share(k) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError):
        result.share(5)


def test_rogue_dimension_ties_go_to_the_lower_index():
    rng = np.random.default_rng(20)
    vectors = rng.standard_normal((30, 6))
    vectors[:, 4] = vectors[:, 1] = 3.0 + rng.standard_normal(30)  # two identical columns
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    result = rogue_dimensions(unit, np.arange(0, 30, 3), top=2)
    assert result.dimensions == (1, 4)
    assert result.contributions[0] == result.contributions[1]


def test_rogue_dimensions_is_a_frozen_record():
    result = RogueDimensions(dimensions=(2,), contributions=(0.5,), total=1.0)
    assert result.share(1) == 0.5
    with pytest.raises(AttributeError):
        result.total = 2.0


@pytest.mark.parametrize(
    "starts",
    [np.array([0]), np.array([1, 3]), np.array([0, 3, 2]), np.array([0, 6])],
    ids=["one sentence", "not from 0", "not increasing", "start past the end"],
)
def test_rogue_dimensions_refuses_bad_sentences(starts):
    unit, _ = random_sentences(np.random.default_rng(21), [6], 4, offset=np.zeros(4))
    with pytest.raises(ValueError):
        rogue_dimensions(unit, starts)


def test_isoscore_is_the_authors_package_algorithm():
    """The IsoScore package's steps, written here as its source has them (PCA rotation, the
    covariance's diagonal with ddof=1, scaled to norm √d, defect, score), give our value:
    the package computes the paper's IsoScore (its repository's bug is in partition_score,
    which `partition_ratio` avoids: see the test above)."""
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(8)
    points = rng.standard_normal((500, 12)) * np.geomspace(3.0, 0.1, 12) @ random_rotation(rng, 12)
    rotated = PCA(n_components=12).fit_transform(points)
    diagonal = np.diag(np.cov(rotated.T))
    n = len(diagonal)
    normalized = diagonal * np.sqrt(n) / np.linalg.norm(diagonal)
    defect = np.linalg.norm(normalized - 1) / np.sqrt(2 * (n - np.sqrt(n)))
    expected = ((n - defect**2 * (n - np.sqrt(n))) ** 2 - n) / (n * (n - 1))
    assert isoscore(points) == pytest.approx(expected, abs=1e-12)
