"""Tests for contextuality.measures.transforms (isotropy corrections fitted on a held-out part).

Each correction is checked on constructed anisotropic data (a large common offset plus a
correlated Gaussian) for the property that defines it: zero mean after ``center``, unit
variances after ``standardize``, identity covariance after ``whiten``, planted dominant
directions removed by ``abtt``. The fitting part gets the property to rounding; a second
sample from the same distribution only to sampling error.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextuality import rows as rows_module
from contextuality.errors import ConfigError, NonFiniteValueError
from contextuality.transforms.fitting import (
    TRANSFORMS,
    TransformSettings,
    corrected_occurrences,
    fit_split,
    fit_transform,
)

D_MODEL = 16
N_ROWS = 5_000
SETTINGS = TransformSettings()


class AnisotropicDistribution:
    """offset + z @ mixing, z standard normal (d,): a large common direction shared by all
    rows plus correlated dimensions of very different scales."""

    def __init__(self, d: int = D_MODEL, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.offset = 50.0 * rng.standard_normal(d)
        self.mixing = rng.standard_normal((d, d)) * np.geomspace(0.1, 10.0, d)

    def sample(self, n: int, seed: int) -> np.ndarray:
        """(n, d) float64 rows."""
        z = np.random.default_rng(seed).standard_normal((n, len(self.offset)))
        return self.offset + z @ self.mixing


@pytest.fixture(scope="module")
def distribution() -> AnisotropicDistribution:
    return AnisotropicDistribution()


@pytest.fixture(scope="module")
def fitting(distribution: AnisotropicDistribution) -> np.ndarray:
    return distribution.sample(N_ROWS, seed=1)


@pytest.fixture(scope="module")
def held_out(distribution: AnisotropicDistribution) -> np.ndarray:
    return distribution.sample(N_ROWS, seed=2)


def covariance(rows: np.ndarray) -> np.ndarray:
    return np.cov(rows.astype(np.float64), rowvar=False, bias=True)


# --------------------------------------------------------------------------------------
# The corrections
# --------------------------------------------------------------------------------------


def test_center_zeroes_the_fitting_mean_and_the_held_out_mean_within_sampling_error(
    fitting: np.ndarray, held_out: np.ndarray
) -> None:
    fitted = fit_transform("center", fitting, SETTINGS)
    assert fitted.n_fit == N_ROWS
    assert np.abs(fitting.mean(axis=0)).max() > 10  # the offset is there to be removed

    exact = (fitting - fitted.mean) @ fitted.matrix  # the parameters, in float64
    scale = np.abs(fitting).max()
    np.testing.assert_array_less(np.abs(exact.mean(axis=0)), 1e-9 * scale)

    applied = fitted.apply(fitting)
    assert applied.dtype == np.float32
    np.testing.assert_allclose(applied.mean(axis=0, dtype=np.float64), 0, atol=1e-5)

    other = fitted.apply(held_out).astype(np.float64)
    standard_error = other.std(axis=0) / np.sqrt(N_ROWS)
    np.testing.assert_array_less(np.abs(other.mean(axis=0)), 5 * standard_error)


def test_standardize_gives_zero_mean_and_unit_std_on_the_fitting_part(
    fitting: np.ndarray,
) -> None:
    out = fit_transform("standardize", fitting, SETTINGS).apply(fitting).astype(np.float64)
    np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-6)
    np.testing.assert_allclose(out.std(axis=0), 1, atol=1e-5)


def test_standardize_leaves_a_constant_dimension_unscaled(fitting: np.ndarray) -> None:
    rows = fitting.copy()
    rows[:, 3] = 0.1  # a mean summed naively is not exactly 0.1: its "std" would be ~1e-17
    fitted = fit_transform("standardize", rows, SETTINGS)
    assert fitted.matrix[3, 3] == 1
    out = fitted.apply(rows)
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[:, 3], 0)


def test_whiten_gives_identity_covariance_on_the_fitting_part_and_nearly_on_held_out(
    fitting: np.ndarray, held_out: np.ndarray
) -> None:
    fitted = fit_transform("whiten", fitting, SETTINGS)
    identity = np.eye(D_MODEL)
    assert np.abs(covariance(fitting) - identity).max() > 1  # far from isotropic before
    np.testing.assert_allclose(covariance(fitted.apply(fitting)), identity, atol=1e-4)

    # Sampling error: each entry ± ~1/sqrt(N_ROWS) ≈ 0.014, so near but not at identity.
    held_out_error = np.abs(covariance(fitted.apply(held_out)) - identity).max()
    assert 1e-3 < held_out_error < 0.15


def test_whiten_keeps_the_top_k_directions_at_unit_variance(fitting: np.ndarray) -> None:
    k = 5
    fitted = fit_transform("whiten", fitting, TransformSettings(whiten_dimensions=k))
    out = fitted.apply(fitting)
    assert out.shape == (N_ROWS, k)
    np.testing.assert_allclose(covariance(out), np.eye(k), atol=1e-4)

    eigenvalues = np.sort(np.linalg.eigvalsh(covariance(fitting)))[::-1]
    description = fitted.describe()
    assert description["output_dimensions"] == k
    assert description["parameters"]["dimensions"] == k
    assert description["parameters"]["smallest_eigenvalue"] == pytest.approx(eigenvalues[k - 1])


def test_abtt_removes_planted_directions_and_keeps_the_rest() -> None:
    rng = np.random.default_rng(3)
    d, planted, noise_std = 16, 3, 0.1
    directions, _ = np.linalg.qr(rng.standard_normal((d, planted)))  # orthonormal (d, D)
    coefficients = 10.0 * rng.standard_normal((N_ROWS, planted)) * [1.0, 2.0, 3.0]
    rows = (
        noise_std * rng.standard_normal((N_ROWS, d))
        + coefficients @ directions.T
        + 20.0 * rng.standard_normal(d)
    )

    fitted = fit_transform("abtt", rows, TransformSettings(abtt_directions=planted))
    out = fitted.apply(rows).astype(np.float64)

    assert (rows @ directions).std(axis=0).min() > 50 * noise_std  # dominant before
    np.testing.assert_array_less(np.abs(out @ directions).max(axis=0), 0.1 * noise_std)

    complement = np.eye(d) - directions @ directions.T
    kept_variance = np.trace(covariance(rows @ complement))
    assert np.trace(covariance(out)) == pytest.approx(kept_variance, rel=0.02)
    assert fitted.describe()["parameters"] == {"directions": planted}


def test_drop_rogue_removes_the_dimensions_that_make_the_expected_cosine() -> None:
    """Two planted rogue dimensions (large means) are dropped, in order, whatever their
    variance; the rows' other dimensions come out as they went in, and the mean cosine of
    the rest is that of zero-mean noise."""
    rng = np.random.default_rng(4)
    rows = rng.standard_normal((N_ROWS, D_MODEL))
    rows[:, 11] += 40.0
    rows[:, 2] -= 25.0
    rows[:, 7] *= 30.0  # large variance, zero mean: not rogue
    fitted = fit_transform("drop_rogue", rows, TransformSettings(rogue_dimensions=2))
    parameters = fitted.describe()["parameters"]
    assert parameters["dimensions"] == [2, 11]
    assert parameters["expected_cosine_share"] > 0.99
    out = fitted.apply(rows)
    kept = [dimension for dimension in range(D_MODEL) if dimension not in (2, 11)]
    np.testing.assert_array_equal(out, rows[:, kept].astype(np.float32))
    units = out / np.linalg.norm(out, axis=1, keepdims=True)
    assert abs(np.mean(units[::2] @ units[1::2].T)) < 0.01
    with pytest.raises(ValueError, match="rogue_dimensions"):
        fit_transform("drop_rogue", rows, TransformSettings(rogue_dimensions=D_MODEL))


@pytest.mark.parametrize(("d", "default_directions"), [(16, 1), (384, 4)])
def test_abtt_default_directions_are_d_over_100(d: int, default_directions: int) -> None:
    rows = AnisotropicDistribution(d).sample(500, seed=4)
    fitted = fit_transform("abtt", rows, SETTINGS)
    assert fitted.describe()["parameters"]["directions"] == default_directions
    assert np.linalg.matrix_rank(fitted.matrix) == d - default_directions


def test_none_returns_the_input_as_float32(fitting: np.ndarray) -> None:
    fitted = fit_transform("none", fitting, SETTINGS)
    out = fitted.apply(fitting)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, fitting.astype(np.float32))


@pytest.mark.parametrize("name", TRANSFORMS)
def test_nan_rows_stay_nan_and_leave_the_other_rows_alone(
    name: str, fitting: np.ndarray, held_out: np.ndarray
) -> None:
    fitted = fit_transform(name, fitting, SETTINGS)
    rows = held_out[:100].copy()
    nan_rows = [3, 70]
    rows[nan_rows] = np.nan
    out = fitted.apply(rows)
    assert np.all(np.isnan(out[nan_rows]))
    finite = np.setdiff1d(np.arange(len(rows)), nan_rows)
    alone = fitted.apply(rows[finite])  # float32 products: equal to rounding at the data's scale
    np.testing.assert_allclose(out[finite], alone, rtol=0, atol=1e-5 * np.abs(alone).max())


@pytest.mark.parametrize("name", TRANSFORMS)
def test_apply_is_row_wise_whatever_the_chunking(
    name: str, fitting: np.ndarray, held_out: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    fitted = fit_transform(name, fitting, SETTINGS)
    rows = held_out[:1_001]
    whole = fitted.apply(rows)
    halves = np.concatenate([fitted.apply(rows[:500]), fitted.apply(rows[500:])])
    rounding = 1e-5 * np.abs(whole).max()  # float32 products, blocked differently
    np.testing.assert_allclose(halves, whole, rtol=0, atol=rounding)

    monkeypatch.setattr(rows_module, "_CHUNK_BYTES", 7 * 8 * rows.shape[1])  # 7 rows
    np.testing.assert_allclose(fitted.apply(rows), whole, rtol=0, atol=rounding)


def test_float16_input_is_accepted(fitting: np.ndarray, held_out: np.ndarray) -> None:
    fit_half = (fitting / 10).astype(np.float16)
    fitted = fit_transform("whiten", fit_half, SETTINGS)
    fitted_wide = fit_transform("whiten", fit_half.astype(np.float64), SETTINGS)
    np.testing.assert_array_equal(fitted.mean, fitted_wide.mean)

    rows = (held_out[:100] / 10).astype(np.float16)
    out = fitted.apply(rows)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, fitted.apply(rows.astype(np.float64)))


@pytest.mark.parametrize("name", TRANSFORMS)
def test_describe_is_json_serialisable(name: str, fitting: np.ndarray) -> None:
    description = fit_transform(name, fitting, SETTINGS).describe()
    assert json.loads(json.dumps(description)) == description
    assert description["name"] == name
    assert description["n_fit"] == N_ROWS
    assert description["input_dimensions"] == D_MODEL


def test_apply_refuses_rows_of_the_wrong_dimension(fitting: np.ndarray) -> None:
    fitted = fit_transform("center", fitting, SETTINGS)
    with pytest.raises(ValueError, match="16 dimensions"):
        fitted.apply(fitting[:, :8])


# --------------------------------------------------------------------------------------
# The split into fitting and measured sentences
# --------------------------------------------------------------------------------------


def test_split_sentences_is_deterministic_per_seed_with_the_exact_count() -> None:
    mask = fit_split(1_000, 0.2, seed=0)
    assert mask.dtype == bool
    assert mask.shape == (1_000,)
    assert mask.sum() == 200
    np.testing.assert_array_equal(mask, fit_split(1_000, 0.2, seed=0))
    assert not np.array_equal(mask, fit_split(1_000, 0.2, seed=1))


@pytest.mark.parametrize(
    ("n_sentences", "fraction", "expected"),
    [(2, 0.01, 1), (2, 0.99, 1), (10, 0.01, 1), (10, 0.99, 9), (7, 0.5, 4)],
)
def test_split_sentences_keeps_both_parts_non_empty(
    n_sentences: int, fraction: float, expected: int
) -> None:
    assert fit_split(n_sentences, fraction, seed=0).sum() == expected


@pytest.mark.parametrize("n_sentences", [0, 1])
def test_split_sentences_needs_two_sentences(n_sentences: int) -> None:
    with pytest.raises(ValueError, match="at least 2 sentences"):
        fit_split(n_sentences, 0.5, seed=0)


# --------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------


def test_unknown_transform_is_refused_with_the_list(fitting: np.ndarray) -> None:
    with pytest.raises(ValueError, match="whiten") as caught:
        fit_transform("pca", fitting, SETTINGS)
    assert all(name in str(caught.value) for name in TRANSFORMS)


@pytest.mark.parametrize(
    "settings",
    [
        {"fit_fraction": 0.0},
        {"fit_fraction": 1.0},
        {"fit_fraction": -0.5},
        {"fit_fraction": float("nan")},
        {"abtt_directions": 0},
        {"abtt_directions": 2.5},
        {"whiten_dimensions": 0},
        {"whiten_dimensions": True},
        {"rogue_dimensions": 0},
    ],
)
def test_bad_settings_are_a_config_error(settings: dict) -> None:
    with pytest.raises(ConfigError, match=next(iter(settings))):
        TransformSettings(**settings)


def test_rank_deficient_whitening_keeps_the_spanned_directions_or_is_refused() -> None:
    rows = AnisotropicDistribution().sample(10, seed=5)  # 10 rows: rank 9 once centred
    with pytest.raises(ValueError, match="rank-deficient") as caught:
        fit_transform("whiten", rows, TransformSettings(whiten_dimensions=12))
    assert "whiten_dimensions to at most 9" in str(caught.value)

    for settings in (SETTINGS, TransformSettings(whiten_dimensions=9)):
        fitted = fit_transform("whiten", rows, settings)
        np.testing.assert_allclose(covariance(fitted.apply(rows)), np.eye(9), atol=1e-4)
    assert fitted.describe()["parameters"]["null_directions"] == D_MODEL - 9


def test_whitening_drops_the_null_direction_of_layer_normalized_rows() -> None:
    """Rows with zero mean over their dimensions (a layer normalization's output) span a
    hyperplane: whitening keeps its d − 1 directions, each at unit variance."""
    rows = AnisotropicDistribution().sample(2000, seed=6)
    rows -= rows.mean(axis=1, keepdims=True)
    fitted = fit_transform("whiten", rows, SETTINGS)
    assert fitted.describe()["parameters"]["null_directions"] == 1
    np.testing.assert_allclose(covariance(fitted.apply(rows)), np.eye(D_MODEL - 1), atol=1e-4)


def test_too_many_directions_are_refused(fitting: np.ndarray) -> None:
    with pytest.raises(ValueError, match="abtt_directions"):
        fit_transform("abtt", fitting, TransformSettings(abtt_directions=D_MODEL))
    with pytest.raises(ValueError, match="whiten_dimensions"):
        fit_transform("whiten", fitting, TransformSettings(whiten_dimensions=D_MODEL + 1))


@pytest.mark.parametrize("bad_value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", TRANSFORMS)
def test_non_finite_fitting_input_is_refused(
    name: str, bad_value: float, fitting: np.ndarray
) -> None:
    rows = fitting[:100].copy()
    rows[42, 5] = bad_value
    with pytest.raises(NonFiniteValueError):
        fit_transform(name, rows, SETTINGS)


def test_fitting_needs_two_rows(fitting: np.ndarray) -> None:
    with pytest.raises(ValueError, match="at least 2 fitting rows"):
        fit_transform("center", fitting[:1], SETTINGS)


def test_corrected_occurrences_fit_on_held_out_sentences_only():
    rng = np.random.default_rng(5)
    sentence_id = np.repeat(np.arange(40), 5)
    vectors = rng.normal(size=(200, 6)) + 3.0
    vectors[7] = np.nan  # no vector
    vectors[8] = 0.0  # no vector (padding)
    fit_sentences = fit_split(40, 0.25, seed=1)
    corrected, fitted = corrected_occurrences(
        vectors, sentence_id, fit_sentences, "center", TransformSettings()
    )
    in_fit = fit_sentences[sentence_id]
    usable = np.isfinite(vectors).all(axis=1) & np.any(vectors != 0, axis=1)
    np.testing.assert_allclose(fitted.mean, vectors[usable & in_fit].mean(axis=0), rtol=1e-12)
    assert fitted.n_fit == int((usable & in_fit).sum())
    assert np.isnan(corrected[in_fit | ~usable]).all()
    measured = ~in_fit & usable
    np.testing.assert_allclose(
        corrected[measured], vectors[measured] - fitted.mean, rtol=1e-5, atol=1e-5
    )


def _layer_normalized_float16(n: int, seed: int, small: float) -> tuple[np.ndarray, np.ndarray]:
    """float16 rows in the hyperplane Σ_j x_j = 0 (a layer normalization's output), its
    normal (d,) and, within it, a direction of standard deviation `small` (the last basis
    vector): d − 1 real directions plus the normal's float16 rounding noise."""
    basis = np.linalg.qr(
        np.c_[np.ones(D_MODEL), np.random.default_rng(0).standard_normal((D_MODEL, D_MODEL - 1))]
    )[0]
    normal, plane = basis[:, 0], basis[:, 1:]
    scales = np.r_[np.geomspace(3.0, 0.3, D_MODEL - 2), small]
    z = np.random.default_rng(seed).standard_normal((n, D_MODEL - 1)) * scales
    rows = (z + 2.0) @ plane.T
    return rows.astype(np.float16), normal


def test_whitening_drops_a_float16_null_direction_and_keeps_a_small_real_one() -> None:
    """Rounding to float16 gives the hyperplane's normal a variance of about
    (eps·x)²/12 ≈ 2e-7 here: noise, not a direction to scale to unit variance (by 2·10³),
    whereas a real direction of variance 1e-4 (about 300 times the rounding's) is
    whitened."""
    rows, normal = _layer_normalized_float16(4000, seed=1, small=0.01)
    eigenvalues = np.linalg.eigvalsh(covariance(rows))
    assert 0 < eigenvalues[0] < 1e-6 and 5e-5 < eigenvalues[1] < 2e-4
    fitted = fit_transform("whiten", rows, SETTINGS)
    parameters = fitted.describe()["parameters"]
    assert parameters["null_directions"] == 1 and parameters["stored_as"] == "float16"
    assert parameters["dimensions"] == D_MODEL - 1
    assert np.linalg.norm(normal @ fitted.matrix) < 1e-2  # blind to the rounding noise
    held_out, _ = _layer_normalized_float16(4000, seed=2, small=0.01)
    np.testing.assert_allclose(covariance(fitted.apply(held_out)), np.eye(D_MODEL - 1), atol=0.15)
    with pytest.raises(ConfigError, match=f"at most {D_MODEL - 1}"):
        fit_transform("whiten", rows, TransformSettings(whiten_dimensions=D_MODEL))


def test_the_null_floor_is_the_stored_dtypes() -> None:
    """The same values passed as float32: the floor is float16's when they were stored as
    float16 (`stored_as`), float32's (far below the rounding noise) when not."""
    rows, _ = _layer_normalized_float16(4000, seed=1, small=0.01)
    wide = rows.astype(np.float32)
    assert fit_transform("whiten", wide, SETTINGS).describe()["parameters"]["null_directions"] == 0
    stored = fit_transform("whiten", wide, SETTINGS, stored_as="float16")
    assert stored.describe()["parameters"]["null_directions"] == 1
