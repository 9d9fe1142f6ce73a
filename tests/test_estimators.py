"""Sampled estimators and bootstrap intervals: agreement with brute force, convergence to
the exact value, and coverage of the intervals at about their nominal rate."""

from __future__ import annotations

import numpy as np
import pytest

from contextuality import measures


def _anisotropic(rng, n_sentences=60, per_sentence=5, dim=16, common=1.0):
    """Unit vectors with a shared direction (so the expected cosine is clearly positive)."""
    offset = common * rng.standard_normal(dim)
    vectors = rng.standard_normal((n_sentences * per_sentence, dim)) + offset
    sentence_ids = np.repeat(np.arange(n_sentences), per_sentence)
    return measures.unit_rows(vectors), sentence_ids


def _brute_pair_mean(unit, sentence_ids):
    unit = unit.astype(np.float64)
    cosines = unit @ unit.T
    different = sentence_ids[:, None] != sentence_ids[None, :]
    return cosines[different].mean()


def test_sampled_baseline_is_the_pair_mean_of_the_drawn_rows():
    unit, sentence_ids = _anisotropic(np.random.default_rng(0))
    estimate, _ = measures.sampled_anisotropy_baseline(
        unit, sentence_ids, 40, 10, np.random.default_rng(9)
    )
    rows = np.random.default_rng(9).choice(len(unit), size=40, replace=False)
    assert estimate == pytest.approx(_brute_pair_mean(unit[rows], sentence_ids[rows]), rel=1e-12)


def test_sampled_baseline_converges_to_the_exact_value():
    unit, sentence_ids = _anisotropic(np.random.default_rng(1))
    starts = np.flatnonzero(np.r_[True, sentence_ids[1:] != sentence_ids[:-1]])
    exact = measures.anisotropy_baseline(unit, starts)
    errors = []
    for size in (20, 80, len(unit)):
        estimates = [
            measures.sampled_anisotropy_baseline(
                unit, sentence_ids, size, 10, np.random.default_rng(seed)
            )[0]
            for seed in range(20)
        ]
        errors.append(np.sqrt(np.mean((np.array(estimates) - exact) ** 2)))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] == pytest.approx(0.0, abs=1e-12)  # the whole population: exact


def test_bootstrap_replicates_match_explicit_resamples():
    unit, sentence_ids = _anisotropic(np.random.default_rng(2), n_sentences=10)
    rng = np.random.default_rng(4)
    estimate, replicates = measures.sampled_anisotropy_baseline(unit, sentence_ids, 30, 5, rng)
    rng = np.random.default_rng(4)
    rows = rng.choice(len(unit), size=30, replace=False)
    counts = rng.multinomial(30, np.full(30, 1 / 30), 5)
    for count, replicate in zip(counts, replicates, strict=True):
        resampled = np.repeat(rows, count)
        assert replicate == pytest.approx(
            _brute_pair_mean(unit[resampled], sentence_ids[resampled]), rel=1e-10
        )


def test_sampled_baseline_interval_covers_the_exact_value_at_about_the_nominal_rate():
    unit, sentence_ids = _anisotropic(np.random.default_rng(3), n_sentences=200, common=0.5)
    starts = np.flatnonzero(np.r_[True, sentence_ids[1:] != sentence_ids[:-1]])
    exact = measures.anisotropy_baseline(unit, starts)
    covered = 0
    trials = 60
    for seed in range(trials):
        _, replicates = measures.sampled_anisotropy_baseline(
            unit, sentence_ids, 100, 200, np.random.default_rng(seed)
        )
        low, high = measures.percentile_interval(replicates, 0.9)
        covered += low <= exact <= high
    assert 0.75 <= covered / trials <= 1.0  # nominal 0.9, loose bound for 60 trials


@pytest.mark.parametrize("centered", [False, True])
def test_mev_baseline_draws_are_independent_samples(centered):
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((50, 8)) @ np.diag([4, 2, 1, 1, 1, 1, 1, 1]) + 3.0
    value, draws = measures.explained_variance_baseline(
        matrix, 20, np.random.default_rng(8), centered, n_draws=6
    )
    replay = np.random.default_rng(8)
    samples = [np.sort(replay.choice(50, size=20, replace=False)) for _ in range(7)]
    expected = [measures.explained_variance_first_component(matrix[s], centered) for s in samples]
    assert value == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(draws, expected[1:], rtol=1e-8)


def test_mev_baseline_interval_covers_the_estimator_at_about_the_nominal_rate():
    """Fresh samples of the estimator fall inside the interval of the draws ~90% of the time."""
    matrix = np.random.default_rng(6).standard_normal((2000, 6)) + 0.5
    _, draws = measures.explained_variance_baseline(
        matrix, 50, np.random.default_rng(0), n_draws=200
    )
    low, high = measures.percentile_interval(draws, 0.9)
    fresh, _ = zip(
        *(
            measures.explained_variance_baseline(matrix, 50, np.random.default_rng(seed))
            for seed in range(1, 201)
        ),
        strict=True,
    )
    inside = np.mean([(low <= value <= high) for value in fresh])
    assert 0.8 <= inside <= 0.97


def test_bootstrap_means_and_percentile_interval():
    values = np.arange(10.0)
    replicates = measures.bootstrap_means(values, 2000, np.random.default_rng(0))
    assert replicates.mean() == pytest.approx(values.mean(), abs=0.1)
    # standard error of a mean of 10 values: sd/sqrt(10) with the population sd
    assert replicates.std() == pytest.approx(values.std() / np.sqrt(10), rel=0.1)
    assert measures.percentile_interval(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))
    assert np.isnan(measures.bootstrap_means(np.array([]), 3, np.random.default_rng(0))).all()


def test_truncated_svd_ratio_is_sklearns():
    from sklearn.decomposition import TruncatedSVD

    matrix = np.random.default_rng(7).standard_normal((80, 12)) + np.linspace(0, 3, 12)
    expected = TruncatedSVD(1, algorithm="arpack").fit(matrix).explained_variance_ratio_[0]
    assert measures.truncated_svd_variance_ratio(matrix) == pytest.approx(expected, rel=1e-8)
    # ... and it is not the uncentered MEV the paper defines.
    assert measures.truncated_svd_variance_ratio(matrix) != pytest.approx(
        measures.explained_variance_first_component(matrix), rel=1e-2
    )


@pytest.mark.parametrize("centered", [False, True])
def test_batched_per_word_mev_equals_one_word_at_a_time(centered):
    """Equal-size groups (solved in one batched call) and groups larger than d agree with
    the per-group computation."""
    rng = np.random.default_rng(11)
    sizes = np.array([3, 5, 3, 3, 12, 5, 1, 20, 3])
    vectors = rng.standard_normal((sizes.sum(), 8)) + 1.0
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    expected = [
        measures.explained_variance_first_component(vectors[start : start + size], centered)
        for start, size in zip(starts, sizes, strict=True)
    ]
    got = measures.explained_variance_per_group(vectors, starts, centered)
    np.testing.assert_allclose(got, expected, rtol=1e-10, equal_nan=True)
