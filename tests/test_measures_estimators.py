"""Sampled estimators, the paper's estimators and bootstrap intervals: agreement with
brute force and with literal re-implementations of the paper's code, convergence to the
exact value, and coverage of the intervals at about their nominal rate."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from sklearn.decomposition import TruncatedSVD

from contextuality.measures import components, equations, summary


def _anisotropic(rng, n_sentences=60, per_sentence=5, dim=16, common=1.0):
    """Unit vectors with a shared direction (so the expected cosine is clearly positive)."""
    offset = common * rng.standard_normal(dim)
    vectors = rng.standard_normal((n_sentences * per_sentence, dim)) + offset
    sentence_ids = np.repeat(np.arange(n_sentences), per_sentence)
    return equations.unit_rows(vectors), sentence_ids


@pytest.mark.parametrize("centered", [False, True])
def test_mev_baseline_draws_are_independent_samples(centered):
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((50, 8)) @ np.diag([4, 2, 1, 1, 1, 1, 1, 1]) + 3.0
    estimates = equations.explained_variance_baseline(
        matrix, 20, np.random.default_rng(8), centered, n_draws=6
    )
    replay = np.random.default_rng(8)
    samples = [np.sort(replay.choice(50, size=20, replace=False)) for _ in range(7)]
    expected = [components.explained_variance_first_component(matrix[s], centered) for s in samples]
    assert estimates[0] == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(estimates[1:], expected[1:], rtol=1e-8)


def test_mev_baseline_interval_covers_the_estimator_at_about_the_nominal_rate():
    """Fresh samples of the estimator fall inside the interval of the draws ~90% of the time."""
    matrix = np.random.default_rng(6).standard_normal((2000, 6)) + 0.5
    estimates = equations.explained_variance_baseline(
        matrix, 50, np.random.default_rng(0), n_draws=200
    )
    low, high = summary.percentile_interval(estimates, 0.9)
    fresh = [
        equations.explained_variance_baseline(matrix, 50, np.random.default_rng(seed))[0]
        for seed in range(1, 201)
    ]
    inside = np.mean([(low <= value <= high) for value in fresh])
    assert 0.8 <= inside <= 0.97


def test_a_sampled_value_is_the_mean_of_its_estimates_inside_their_spread():
    """A sampled statistic's value is the mean of its estimates on independent samples and
    its interval their equal-tailed percentiles; the adjusted one pairs them sample by
    sample. An extreme first sample moves the value by its share only, inside the interval
    (the first sample alone as the value would lie outside it)."""
    estimates = np.arange(41.0)
    sampled = summary.sampled_summary(estimates, n=1000, level=0.95, baseline=0.5 * estimates)
    assert sampled["raw"] == 20.0 and sampled["baseline"] == 10.0 and sampled["adjusted"] == 10.0
    assert (sampled["raw_low"], sampled["raw_high"]) == pytest.approx((1.0, 39.0))
    assert (sampled["adjusted_low"], sampled["adjusted_high"]) == pytest.approx((0.5, 19.5))
    assert sampled["n"] == 1000

    skewed = np.concatenate(([0.9], np.random.default_rng(1).normal(0.1, 0.01, size=50)))
    baseline = summary.Baseline.sampled(skewed)
    low, high = summary.percentile_interval(baseline.replicates, 0.95)
    assert baseline.value == pytest.approx(skewed.mean()) and low < baseline.value < high
    assert not low <= skewed[0] <= high


def test_bootstrap_means_and_percentile_interval():
    values = np.arange(10.0)
    replicates = summary.bootstrap_means(values, 2000, np.random.default_rng(0))
    assert replicates.mean() == pytest.approx(values.mean(), abs=0.1)
    # standard error of a mean of 10 values: sd/sqrt(10) with the population sd
    assert replicates.std() == pytest.approx(values.std() / np.sqrt(10), rel=0.1)
    assert summary.percentile_interval(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))
    assert np.isnan(summary.bootstrap_means(np.array([]), 3, np.random.default_rng(0))).all()


def _sklearn_ratio(matrix: np.ndarray) -> float:
    """What the paper's code computed: TruncatedSVD(n_components=100) on the word's rows
    (capped below the matrix rank bound, as ARPACK requires), first ratio."""
    components = min(100, min(matrix.shape) - 1)
    svd = TruncatedSVD(n_components=components, algorithm="arpack", random_state=0)
    return float(svd.fit(matrix).explained_variance_ratio_[0])


@pytest.mark.parametrize(("n", "d"), [(6, 40), (30, 20), (120, 12)])
def test_truncated_svd_ratio_is_sklearns(n, d):
    rng = np.random.default_rng(n)
    matrix = rng.standard_normal((n, d)) + np.linspace(0, 3, d)
    assert components.truncated_svd_variance_ratio(matrix) == pytest.approx(
        _sklearn_ratio(matrix), abs=1e-6
    )
    # ... and it is not the uncentered MEV the paper defines.
    assert components.truncated_svd_variance_ratio(matrix) != pytest.approx(
        components.explained_variance_first_component(matrix), rel=1e-2
    )


def test_weighted_truncated_svd_ratio_repeats_rows():
    """A weight of c is the row listed c times (a sentence the corpus repeats)."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((9, 15)) + 2.0
    weights = np.array([1, 3, 1, 2, 1, 1, 4, 1, 1])
    repeated = np.repeat(matrix, weights, axis=0)
    assert components.truncated_svd_variance_ratio(matrix, weights) == pytest.approx(
        _sklearn_ratio(repeated), abs=1e-6
    )


def test_truncated_svd_ratio_is_at_most_the_centered_pca_share():
    """var(Xv) ≤ λ_max of the covariance for any unit v, so the paper's estimator never
    exceeds the centered PCA share, which for n rows is at least 1/(n − 1): the published
    GPT-2 "render" value (.173 from 6 occurrences) cannot be a centered PCA share."""
    rng = np.random.default_rng(4)
    below = 0
    for _ in range(200):
        matrix = rng.standard_normal((6, 30)) + 3 * rng.standard_normal(30)
        ratio = components.truncated_svd_variance_ratio(matrix)
        centered = components.explained_variance_first_component(matrix, centered=True)
        assert ratio <= centered + 1e-12
        assert centered >= 1 / 5 - 1e-12
        below += ratio < 1 / 5
    assert below > 0  # the paper's estimator does go below 1/5 on six rows


def test_first_component_statistics_match_per_word_references():
    """Batched groups (equal sizes), single groups and groups larger than d agree with a
    per-group SVD, centered PCA and scikit-learn on the repeated rows."""
    rng = np.random.default_rng(11)
    sizes = np.array([3, 5, 3, 3, 12, 5, 1, 20, 3])
    vectors = rng.standard_normal((sizes.sum(), 8)) + 1.0
    weights = rng.choice([1, 1, 2, 3], size=sizes.sum())
    weights[:9] = 1  # the first three groups unweighted
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    statistics = components.first_component_statistics(vectors, starts, weights)
    for group, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        rows = vectors[start : start + size]
        row_weights = weights[start : start + size]
        assert statistics.mev[group] == pytest.approx(
            components.explained_variance_first_component(rows), rel=1e-10
        )
        if size == 1:
            assert np.isnan(statistics.mev_centered[group])
            assert np.isnan(statistics.truncated_svd[group])
            continue
        assert statistics.mev_centered[group] == pytest.approx(
            components.explained_variance_first_component(rows, centered=True), rel=1e-10
        )
        repeated = np.repeat(rows, row_weights, axis=0)
        assert statistics.truncated_svd[group] == pytest.approx(_sklearn_ratio(repeated), abs=1e-6)


def test_large_groups_solved_by_lanczos_match_the_dense_references(monkeypatch):
    """Groups above `components._LANCZOS_LIMIT` rows and columns (two stacked, one alone,
    one weighted) take Lanczos iteration; their shares equal the dense eigendecomposition's
    and scikit-learn's on the repeated rows."""
    solved = []
    lanczos = components.top_singular_pair
    monkeypatch.setattr(
        components,
        "top_singular_pair",
        lambda *args, **kw: solved.append(1) or lanczos(*args, **kw),
    )
    rng = np.random.default_rng(5)
    d = components._LANCZOS_LIMIT + 10
    sizes = np.array([d + 10, d + 10, 3 * d, 4])
    vectors = rng.standard_normal((sizes.sum(), d)) + 0.4
    weights = np.ones(sizes.sum(), dtype=np.int64)
    weights[sizes[0] : sizes[0] + 5] = 3  # the second group weighted
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    statistics = components.first_component_statistics(vectors, starts, weights)
    for group, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        rows = vectors[start : start + size]
        for centered, values in ((False, statistics.mev), (True, statistics.mev_centered)):
            assert values[group] == pytest.approx(
                components.explained_variance_first_component(rows, centered), rel=1e-10
            )
        repeated = np.repeat(rows, weights[start : start + size], axis=0)
        assert statistics.truncated_svd[group] == pytest.approx(_sklearn_ratio(repeated), abs=1e-6)
    assert len(solved) >= 3 * 2  # three large groups, uncentered and centered


@pytest.mark.parametrize("shape", [(190, 170), (500, 170), (170, 500), (2, 6), (6, 2)])
def test_the_top_singular_pair_is_the_svd_s(shape):
    """σ₁² and v₁ (up to sign) by Lanczos iteration equal LAPACK's full SVD, for tall, wide
    and tiny matrices; a zero matrix has σ₁ = 0."""
    matrix = np.random.default_rng(3).standard_normal(shape) + 0.2
    value, vector = components.top_singular_pair(matrix, with_vector=True)
    _, singular_values, right = np.linalg.svd(matrix)
    assert value == pytest.approx(singular_values[0] ** 2, rel=1e-12)
    assert abs(vector @ right[0]) == pytest.approx(1.0, abs=1e-10)
    assert components.top_singular_pair(matrix)[0] == pytest.approx(value, rel=1e-12)
    assert components.top_singular_pair(np.zeros(shape), with_vector=True)[0] == 0.0


def _listed(unit: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The paper's occurrence list of a word: each occurrence once per copy of its sentence."""
    return np.repeat(unit.astype(np.float64), weights, axis=0)


def test_paper_self_similarity_is_the_mean_over_all_listed_pairs():
    rng = np.random.default_rng(12)
    sizes = [4, 1, 7, 2]
    unit = equations.unit_rows(rng.standard_normal((sum(sizes), 6)) + 1.0)
    weights = rng.choice([1, 2, 3], size=sum(sizes))
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    got = equations.paper_self_similarity(unit, starts, weights)
    for group, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        listed = _listed(unit[start : start + size], weights[start : start + size])
        pairs = [(i, j) for i, j in itertools.product(range(len(listed)), repeat=2) if i != j]
        if not pairs:
            assert np.isnan(got[group])
            continue
        expected = np.mean([listed[i] @ listed[j] for i, j in pairs])
        assert got[group] == pytest.approx(expected, rel=1e-6)


def test_paper_self_similarity_is_the_expectation_of_the_authors_sample():
    """The authors drew 1,000 of a frequent word's ordered pairs: their estimates average
    to our value."""
    rng = np.random.default_rng(13)
    unit = equations.unit_rows(rng.standard_normal((60, 5)) + 0.5)
    weights = rng.choice([1, 2], size=60)
    exact = equations.paper_self_similarity(unit, np.array([0]), weights)[0]
    listed = _listed(unit, weights)
    pairs = [(i, j) for i, j in itertools.product(range(len(listed)), repeat=2) if i != j]
    sampler = random.Random(0)
    estimates = []
    for _ in range(200):
        chosen = sampler.sample(pairs, 1000)
        estimates.append(np.mean([listed[i] @ listed[j] for i, j in chosen]))
    spread = np.std(estimates) / np.sqrt(len(estimates))
    assert np.mean(estimates) == pytest.approx(exact, abs=4 * spread)


def _paper_corpus(rng, n_sentences=40):
    sizes = rng.integers(1, 6, size=n_sentences)
    vectors = rng.standard_normal((sizes.sum(), 7)) + 1.5
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    copies = rng.choice([1, 1, 2, 4], size=n_sentences)
    return vectors, starts, sizes, copies


def test_paper_word_sample_draws_sentences_by_copies_then_a_uniform_word():
    rng = np.random.default_rng(14)
    vectors, starts, sizes, copies = _paper_corpus(rng)
    # Drawing the whole list: each sentence exactly as often as the corpus repeats it.
    drawn, rows = equations.paper_word_sample(starts, len(vectors), copies, 10**6, rng)
    assert np.bincount(drawn, minlength=len(starts)).tolist() == copies.tolist()
    assert np.all((rows >= starts[drawn]) & (rows < starts[drawn] + sizes[drawn]))
    # Small samples: a sentence's share follows its copies, a word's share 1/size.
    counts = np.zeros(len(starts))
    word_counts = np.zeros(len(vectors))
    for _ in range(3000):
        drawn, rows = equations.paper_word_sample(starts, len(vectors), copies, 5, rng)
        np.add.at(counts, drawn, 1)
        np.add.at(word_counts, rows, 1)
    expected = 3000 * 5 * copies / copies.sum()
    assert np.abs(counts - expected).max() < 5 * np.sqrt(expected.max())
    within = word_counts / np.repeat(counts, sizes)
    np.testing.assert_allclose(within, np.repeat(1 / sizes, sizes), atol=0.12)


def test_paper_sample_estimates_match_brute_force_on_the_drawn_sample():
    rng = np.random.default_rng(15)
    vectors, starts, sizes, copies = _paper_corpus(rng, 60)
    unit = equations.unit_rows(vectors)
    intrasim = equations.intra_similarity(vectors, starts)
    anisotropy, intra, ratio = equations.paper_sample_estimates(
        vectors, intrasim, starts, copies, 25, np.random.default_rng(5)
    )
    drawn, rows = equations.paper_word_sample(
        starts, len(vectors), copies, 25, np.random.default_rng(5)
    )
    sample = unit[rows].astype(np.float64)
    # All 25² ordered pairs, a word with itself included, as 1,000 draws with replacement.
    assert anisotropy == pytest.approx(np.mean(sample @ sample.T), rel=1e-6)
    per_sentence = []
    for sentence in drawn:
        words = vectors[starts[sentence] : starts[sentence] + sizes[sentence]]
        mean = words.mean(axis=0)
        cosines = words @ mean / np.linalg.norm(words, axis=1) / np.linalg.norm(mean)
        per_sentence.append(cosines.mean())  # 1 for a one-word sentence
    assert intra == pytest.approx(np.mean(per_sentence), rel=1e-6)
    assert ratio == pytest.approx(_sklearn_ratio(vectors[rows]), abs=1e-6)


def test_paper_anisotropy_is_the_expectation_of_the_authors_random_pairs():
    """The authors averaged 1,000 cosines of pairs drawn with replacement from the sampled
    words; over many such draws that average tends to our value for the same sample."""
    rng = np.random.default_rng(16)
    vectors, starts, _, copies = _paper_corpus(rng, 80)
    unit = equations.unit_rows(vectors)
    intrasim = equations.intra_similarity(vectors, starts)
    estimate = equations.paper_sample_estimates(
        vectors, intrasim, starts, copies, 50, np.random.default_rng(6)
    )[0]
    _, rows = equations.paper_word_sample(
        starts, len(vectors), copies, 50, np.random.default_rng(6)
    )
    sample = unit[rows].astype(np.float64)
    sampler = random.Random(1)
    averages = []
    for _ in range(300):
        pairs = [(sampler.choice(sample), sampler.choice(sample)) for _ in range(1000)]
        averages.append(np.mean([a @ b for a, b in pairs]))
    spread = np.std(averages) / np.sqrt(len(averages))
    assert np.mean(averages) == pytest.approx(estimate, abs=4 * spread)


def test_uncentered_mev_is_at_least_selfsim_plus_its_remainder_over_n():
    """For unit rows, σ₁² ≥ ‖X ū‖² along the mean direction ū gives MEV ≥ S + (1 − S)/n,
    S the mean cosine over all pairs: adjusted Definition-3 MEV retraces adjusted SelfSim."""
    rng = np.random.default_rng(17)
    for n in (3, 8, 40):
        for spread in (0.3, 1.0, 3.0):
            unit = equations.unit_rows(rng.standard_normal((n, 12)) * spread + 1.0)
            cosines = unit.astype(np.float64) @ unit.T.astype(np.float64)
            selfsim = (cosines.sum() - n) / (n * n - n)
            bound = selfsim + (1 - selfsim) / n
            assert components.explained_variance_first_component(unit) >= bound - 1e-9


def _repeated_row(n: int) -> np.ndarray:
    """n copies of one float16-stored vector whose float64 mean is not exact (found by search:
    the uncentered E‖x‖² − ‖E x‖² of these rows leaves a positive rounding residue)."""
    row = np.random.default_rng(1).standard_normal(384).astype(np.float16)
    return np.tile(row.astype(np.float64), (n, 1))


def test_shares_of_variance_are_undefined_for_identical_rows():
    """Identical occurrences have no variance: every centered share is 0/0 (NaN, as for a
    word seen once), not a ratio of rounding residues; the uncentered MEV is 1."""
    rows = _repeated_row(7)
    statistics = components.first_component_statistics(rows, np.array([0]))
    weighted = components.first_component_statistics(rows, np.array([0]), np.arange(1.0, 8.0))
    assert statistics.mev[0] == pytest.approx(1.0)
    for value in (
        statistics.mev_centered[0],
        statistics.truncated_svd[0],
        weighted.truncated_svd[0],
    ):
        assert np.isnan(value)
    assert np.isnan(components.truncated_svd_variance_ratio(rows))
    scaled = np.tile(np.random.default_rng(0).standard_normal(40) * 7.3, (30, 1))
    assert np.isnan(components.explained_variance_first_component(scaled, centered=True))
    estimates = equations.explained_variance_baseline(
        scaled, 20, np.random.default_rng(0), centered=True, n_draws=3
    )
    assert np.isnan(estimates).all()


def test_a_one_ulp_difference_is_variance_in_float64_rows_and_rounding_in_float16_rows():
    """One float16 ulp between two occurrences, held as float64, is a real variance: the
    centered share is 1 (one direction of variance) and the truncated-SVD ratio
    cos²(δ, v₁) = x_j²/‖x‖² for a difference δ along coordinate j and v₁ ≈ x/‖x‖. Stored
    as float16 (as shards store them), the same rows differ by no more than that dtype
    resolves (a GPU's pooling sums in a varying order): every centered share is 0/0."""
    rows = _repeated_row(7)
    j = int(np.argmax(np.abs(rows[0])))
    rows[3, j] = float(np.nextafter(np.float16(rows[3, j]), np.float16(np.inf)))
    statistics = components.first_component_statistics(rows, np.array([0]))
    assert statistics.mev_centered[0] == pytest.approx(1.0, rel=1e-9)
    expected = rows[0, j] ** 2 / np.sum(rows[0] ** 2)
    assert statistics.truncated_svd[0] == pytest.approx(expected, rel=1e-3)
    assert components.truncated_svd_variance_ratio(rows) == pytest.approx(expected, rel=1e-3)

    stored = rows.astype(np.float16)
    assert np.array_equal(stored.astype(np.float64), rows)  # the same values, as float16
    as_stored = components.first_component_statistics(stored, np.array([0]))
    assert as_stored.mev[0] == pytest.approx(1.0)
    assert np.isnan(as_stored.mev_centered[0]) and np.isnan(as_stored.truncated_svd[0])
    assert np.isnan(components.truncated_svd_variance_ratio(stored))
    assert np.isnan(components.explained_variance_first_component(stored, centered=True))
    assert np.isnan(components.top_component_share(stored, centered=True))


def test_float16_rows_with_resolved_variance_keep_their_shares():
    """Occurrences 1 % apart, stored as float16, are far above its rounding: their shares
    are those of the same values held as float64."""
    generator = np.random.default_rng(3)
    base = generator.standard_normal(64)
    stored = (base + 0.01 * generator.standard_normal((9, 64))).astype(np.float16)
    as_stored = components.first_component_statistics(stored, np.array([0]))
    as_float64 = components.first_component_statistics(stored.astype(np.float64), np.array([0]))
    for field in ("mev", "mev_centered", "truncated_svd"):
        assert np.isfinite(getattr(as_stored, field)[0])
        assert getattr(as_stored, field)[0] == getattr(as_float64, field)[0]
