"""Linear CKA between layers and models (`linear_cka`), intrinsic dimension (`dimension`)
and the steps that compute them from shards (`steps.geometry`)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ortho_group

from contextuality import backends, steps
from contextuality.api.geometry import intrinsic_dimension
from contextuality.corpus.index import IndexFiles, index_checksum
from contextuality.files.provenance import read_json, write_json
from contextuality.files.tables import read_provenance, write_parquet
from contextuality.geometry import dimension, linear_cka
from contextuality.geometry.alignment import sample_rows
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.dimension import CURVE_COLUMNS
from contextuality.geometry.settings import GeometrySettings
from contextuality.steps.geometry import ModelLayers
from contextuality.storage.shards import ShardSetWriter


def typed(settings: dict) -> GeometrySettings:
    """The geometry steps' typed settings from a test's dict."""
    return GeometrySettings.from_config(settings)


def kernel_cka(x: np.ndarray, y: np.ndarray) -> float:
    """CKA by its kernel definition: tr(KHLH)/√(tr(KHKH) tr(LHLH)), K = XXᵀ, L = YYᵀ."""
    centering = np.eye(len(x)) - 1.0 / len(x)
    k = centering @ (x @ x.T) @ centering
    m = centering @ (y @ y.T) @ centering
    return float(np.sum(k * m) / np.sqrt(np.sum(k * k) * np.sum(m * m)))


def chunked(layers, other=None, size=7):
    """The layers' rows a chunk at a time, as `linear_cka.linear_cka` takes them."""
    for start in range(0, len(layers[0]), size):
        yield (
            [layer[start : start + size] for layer in layers],
            None if other is None else [layer[start : start + size] for layer in other],
        )


@pytest.fixture
def layers():
    """Three layers of 60 rows: far from the origin, unrelated, and a noisy linear map of
    the first."""
    rng = np.random.default_rng(0)
    first = rng.normal(size=(60, 4)) + 10_000.0
    mapped = first @ rng.normal(size=(4, 3)) + 0.1 * rng.normal(size=(60, 3))
    return [first, rng.normal(size=(60, 6)), mapped]


def test_linear_cka_in_chunks_is_the_kernel_definition(layers):
    found = linear_cka.linear_cka(chunked(layers), [4, 6, 3])
    expected = [[kernel_cka(x, y) for y in layers] for x in layers]
    np.testing.assert_allclose(found, expected, atol=1e-5)
    np.testing.assert_allclose(np.diag(found), 1.0, atol=1e-6)
    np.testing.assert_allclose(found, found.T, atol=1e-12)
    assert found[0, 2] > found[0, 1] + 0.5  # a linear map of the first layer, not noise


def test_linear_cka_between_two_models_is_the_kernel_definition(layers):
    rng = np.random.default_rng(1)
    other = [rng.normal(size=(60, 5)), layers[1][:, :2] + 0.01 * rng.normal(size=(60, 2))]
    found = linear_cka.linear_cka(chunked(layers, other), [4, 6, 3], [5, 2])
    expected = [[kernel_cka(x, y) for y in other] for x in layers]
    np.testing.assert_allclose(found, expected, atol=1e-5)
    assert found.shape == (3, 2)


def test_linear_cka_ignores_rotations_scales_and_shifts(layers):
    rotation = ortho_group.rvs(4, random_state=2)
    moved = 3.0 * layers[0] @ rotation - 500.0
    found = linear_cka.linear_cka(chunked([layers[0]], [moved, layers[1]]), [4], [4, 6])
    assert found[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert found[0, 1] == pytest.approx(kernel_cka(layers[0], layers[1]), abs=1e-5)


def test_a_layer_without_variance_has_no_cka(layers):
    constant = np.ones((60, 2))
    found = linear_cka.linear_cka(chunked([layers[1], constant]), [6, 2])
    assert np.isnan(found[0, 1]) and np.isnan(found[1, 1])
    assert found[0, 0] == pytest.approx(1.0)


def unbiased_hsic(x: np.ndarray, y: np.ndarray) -> float:
    """Song et al. 2012's unbiased HSIC by its n × n definition, linear kernels."""
    n = len(x)
    k, m = x @ x.T, y @ y.T
    np.fill_diagonal(k, 0.0)
    np.fill_diagonal(m, 0.0)
    ones = np.ones(n)
    value = np.sum(k * m) + (ones @ k @ ones) * (ones @ m @ ones) / ((n - 1) * (n - 2))
    return float((value - 2 * (ones @ k @ m @ ones) / (n - 2)) / (n * (n - 3)))


def debiased_kernel_cka(x: np.ndarray, y: np.ndarray) -> float:
    return unbiased_hsic(x, y) / np.sqrt(unbiased_hsic(x, x) * unbiased_hsic(y, y))


def _products(layers, other=None, size=7):
    widths = [layer.shape[1] for layer in layers]
    products = linear_cka.CrossProducts(
        widths, None if other is None else [layer.shape[1] for layer in other]
    )
    for left, right in chunked(layers, other, size):
        products.add(left, right)
    return products


def test_debiased_cka_in_chunks_is_the_unbiased_hsic_definition(layers):
    """Within one set and between two, far from the origin (so the shift matters), the
    chunked feature-space sums give the n × n estimator."""
    centered = [layer - layer.mean(axis=0) for layer in layers]  # the estimator ignores shifts
    within = _products(layers).debiased_cka()
    expected = [[debiased_kernel_cka(x, y) for y in centered] for x in centered]
    np.testing.assert_allclose(within, expected, atol=1e-5)
    np.testing.assert_allclose(np.diag(within), 1.0, atol=1e-6)
    rng = np.random.default_rng(4)
    other = [rng.normal(size=(60, 5)) - 300.0, layers[2] + 0.5 * rng.normal(size=(60, 3))]
    between = _products(layers, other, size=11).debiased_cka()
    expected = [[debiased_kernel_cka(x, y - y.mean(axis=0)) for y in other] for x in centered]
    np.testing.assert_allclose(between, expected, atol=1e-5)


def test_debiased_cka_of_unrelated_rows_is_near_zero_where_the_biased_form_is_not():
    """Independent Gaussian layers of 200 dimensions on 400 rows: linear CKA is near its
    bias, about p/n = 0.5 here; the debiased form is near 0 (its spread is about 1/n)."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(400, 200)), rng.normal(size=(400, 200))
    products = _products([x, y], size=128)
    biased, debiased = products.cka()[0, 1], products.debiased_cka()[0, 1]
    assert biased > 0.3
    assert abs(debiased) < 0.02
    assert debiased == pytest.approx(debiased_kernel_cka(x, y), abs=1e-6)


def on_subspace(n: int, intrinsic: int, ambient: int, seed: int) -> np.ndarray:
    """`n` points uniform in a unit cube of `intrinsic` dimensions, rotated into `ambient`."""
    rng = np.random.default_rng(seed)
    basis = ortho_group.rvs(ambient, random_state=seed)[:intrinsic]
    return rng.uniform(size=(n, intrinsic)) @ basis + 5.0


def curves_of(points: np.ndarray, **settings) -> dict[str, dimension.Curve]:
    found = dimension.DimensionSettings(**settings)
    neighbours = dimension.neighbourhoods(points, found.range_max)
    return dimension.dimension_curves(neighbours, found, 0.95, np.random.default_rng(0))


@pytest.mark.parametrize("intrinsic", [2, 5])
def test_a_known_dimension_is_recovered_at_every_scale(intrinsic):
    """Uniform in a cube rotated into 40 dimensions: both curves within 15 % of the
    dimension at every scale (the cube's faces pull the largest scales down), and the value
    on their plateau within 10 %."""
    curves = curves_of(on_subspace(4000, intrinsic, 40, seed=intrinsic))
    assert list(curves["twonn"].scales) == [4000, 2000, 1000, 500, 250, 125]
    assert list(curves["gride"].scales) == [1, 2, 4, 8, 16, 32]
    for curve in curves.values():
        np.testing.assert_allclose(curve.dimension, intrinsic, rtol=0.15)
        assert np.all(np.diff(curve.radius) > 0), "scales run from small to large"
        found = dimension.plateau(curve, 3, 0.1)
        assert found.value == pytest.approx(intrinsic, rel=0.1), curve.estimator
        assert found.low <= found.value <= found.high


def test_noise_at_small_scales_is_read_past_on_the_plateau():
    """A plane with a little noise in 38 more dimensions: at the smallest scale both
    estimators see the noise (over 30 % too high); the plateau, at larger scales, is the
    plane's 2."""
    rng = np.random.default_rng(1)
    points = on_subspace(4000, 2, 40, seed=2) + rng.normal(scale=5e-4, size=(4000, 40))
    for curve in curves_of(points, range_max=128).values():
        assert curve.dimension[0] > 2.6, curve.estimator
        found = dimension.plateau(curve, 3, 0.1)
        assert found.start > 0
        assert found.value == pytest.approx(2, rel=0.1), curve.estimator


def test_the_plateau_rule():
    """The flattest run of `width` scales within `tolerance` of its mean, the smaller
    length scale on a tie; none where no run is that flat or the curve is too short."""

    def curve(values):
        values = np.asarray(values, dtype=np.float64)
        scales = np.arange(1, len(values) + 1, dtype=np.float64)
        return dimension.Curve("gride", scales, scales, values, values, values)

    found = dimension.plateau(curve([10, 7, 7.2, 7.1, 9, 12]), 3, 0.1)
    assert (found.start, found.stop) == (1, 3)
    assert (found.value, found.low, found.high) == pytest.approx((7.1, 7.0, 7.2))
    assert found.scale(curve([10, 7, 7.2, 7.1])) == "k=2–4"
    assert dimension.plateau(curve([5, 5, 5, 5, 5]), 3, 0.1).start == 0  # a tie
    assert dimension.plateau(curve([4, 6, 8, 10, 12]), 3, 0.1) is None  # climbing throughout
    assert dimension.plateau(curve([4, 6, 8, 10, 12]), 2, 0.25).start == 3
    assert dimension.plateau(curve([7, 7]), 3, 0.1) is None
    assert dimension.plateau(curve([np.nan, 7, 7, 7.1]), 3, 0.1).start == 1


def test_twonn_by_decimation_and_gride_against_their_definitions():
    """TwoNN's first scale is scikit-dimension's TwoNN on every point and its later ones the
    mean over disjoint subsets; GRIDE at k = 1 is the Pareto maximum likelihood
    (N − 1) / Σ log μ of μ = r₂/r₁ (after dadapy's cut), from every distance."""
    from scipy.spatial.distance import cdist
    from skdim.id import TwoNN

    points = on_subspace(600, 3, 12, seed=7)
    curves = curves_of(points, min_points=150)
    twonn = curves["twonn"]
    assert list(twonn.scales) == [600, 300, 150]
    assert twonn.dimension[0] == pytest.approx(TwoNN().fit(points).dimension_)
    assert np.isnan(twonn.low[0]) and np.isnan(twonn.high[0])  # one subset: no spread
    order = np.random.default_rng(0).permutation(600)
    halves = [TwoNN().fit(points[part]).dimension_ for part in np.array_split(order, 2)]
    assert twonn.dimension[1] == pytest.approx(np.mean(halves))
    assert twonn.low[1] < twonn.dimension[1] < twonn.high[1]

    distances = np.sort(cdist(points, points), axis=1)
    mu = distances[:, 2] / distances[:, 1]
    q95, q50 = np.percentile(mu, [95, 50])
    kept = mu[mu < 20 * (q95 - q50) + q50]
    gride = curves["gride"]
    assert gride.dimension[0] == pytest.approx((len(kept) - 1) / np.log(kept).sum(), rel=1e-8)
    assert gride.radius[0] == pytest.approx(distances[:, 2].mean())
    assert np.all(gride.low < gride.dimension) and np.all(gride.dimension < gride.high)


def test_every_subset_s_two_nearest_are_a_search_of_the_subset_alone():
    """TwoNN's later levels read each point's two nearest in its subset from its nearest in
    all (brute force in the subset where that list holds fewer than two): each level is
    what a search of each subset alone gives, down to subsets where almost every point's
    list holds none of its subset, and for points with repeats taken out."""
    from scipy.spatial.distance import cdist
    from skdim.id import TwoNN

    points = on_subspace(640, 4, 12, seed=21).astype(np.float16)
    nudged = points[:40].copy()
    nudged[:, ::3] = np.nextafter(nudged[:, ::3], np.float16(np.inf))  # 40 near repeats
    found = dimension.neighbourhoods(np.concatenate([points[:320], nudged, points[320:]]), 8)
    n = len(found.points)  # the distinct ones (float16 may round two points into one)
    assert n >= 630 and found.indices.shape == (n, 8)
    rows = np.arange(n)[:, None]
    np.testing.assert_allclose(
        found.distances, np.linalg.norm(found.points[found.indices] - found.points[rows], axis=2)
    )
    curve = dimension.twonn_curve(found, 19, 0.9, np.random.default_rng(3))
    assert list(curve.scales) == [n // 2**level for level in range(6)]
    order = np.random.default_rng(3).permutation(n)
    for level, subsets in enumerate(2 ** np.arange(6)):
        estimates, second = [], []
        for part in np.array_split(order, subsets):
            two = np.sort(cdist(found.points[part], found.points[part]), axis=1)[:, 1:3]
            estimates.append(TwoNN(dist=True).fit(two).dimension_)
            second.append(two[:, 1])
        assert curve.dimension[level] == pytest.approx(np.mean(estimates), rel=1e-9)
        assert curve.radius[level] == pytest.approx(np.concatenate(second).mean(), rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 4, 5, 9])
def test_the_exact_search_by_distance_finds_each_query_s_nearest_other_rows(k):
    """By passes of argmin (k up to `ARGMIN_PASSES_UP_TO`) or one partition past it, each
    query's k nearest other rows are those a full sort of the distances gives, the query
    itself left out, on points whose squared norms dwarf their distances."""
    from scipy.spatial.distance import cdist

    from contextuality.geometry.search import ARGMIN_PASSES_UP_TO, exact_nearest

    assert 2 <= ARGMIN_PASSES_UP_TO < 5
    points = on_subspace(500, 6, 20, seed=8) * 10.0
    queries = np.arange(0, 500, 7)
    found = exact_nearest(points, queries, k, True, "cpu")
    gaps = cdist(points[queries], points)
    gaps[np.arange(len(queries)), queries] = np.inf
    got = np.sort(np.take_along_axis(gaps, found, 1), axis=1)
    np.testing.assert_allclose(got, np.sort(gaps, axis=1)[:, :k], rtol=1e-12)


def test_gride_equals_scikit_dimension_s_at_every_scale():
    """The likelihood found from one neighbour search is scikit-dimension's GRIDE
    (multiscale) at every order, its standard error within 0.1 % (the information's
    N − 1 against scikit-dimension's N)."""
    from skdim.id import GRIDE

    points = on_subspace(3000, 4, 30, seed=1)
    peer = GRIDE(multiscale=True, range_max=64).fit(points)
    curve = curves_of(points)["gride"]
    np.testing.assert_array_equal(curve.scales, peer.scales_)
    np.testing.assert_allclose(curve.dimension, peer.dimension_scales_, rtol=1e-10)
    np.testing.assert_allclose(curve.radius, peer.radius_scales_, rtol=1e-12)
    error = (curve.high - curve.dimension) / 1.959963984540054
    np.testing.assert_allclose(error, peer.error_scales_, rtol=1e-3)


def test_too_few_points_give_shorter_curves_not_a_failure():
    points = on_subspace(150, 3, 10, seed=1)
    curves = curves_of(points)
    assert list(curves["twonn"].scales) == [150]  # 75 points would be under min_points
    assert list(curves["gride"].scales) == [1, 2, 4, 8, 16, 32]
    few = curves_of(points[:2])
    assert len(few["gride"].scales) == 0 and len(few["twonn"].scales) == 0


def test_duplicates_are_removed_before_the_estimators_see_them():
    points = on_subspace(300, 3, 10, seed=1)
    repeated = np.concatenate([points, points[:200], points[:50]])
    assert np.array_equal(dimension.neighbourhoods(repeated, 8).points, points)
    settings = typed(
        {
            "seed": 0,
            "confidence": 0.95,
            "sample_size": None,
            "intrinsic_dimension": {"min_points": 50},
        }
    )
    with_repeats = intrinsic_dimension(repeated, settings, **LABELS)
    alone = intrinsic_dimension(points, settings, **LABELS)
    assert with_repeats.summary == alone.summary
    assert {row["n"] for row in with_repeats.curve_rows} == {300}


@pytest.mark.parametrize("copies, searched_alone", [(3, 1000), (20, 1000), (20, 0)])
def test_near_repeats_taken_out_leave_each_point_its_nearest_among_the_rest(
    copies, searched_alone, monkeypatch
):
    """Each point's distances after its ulp-apart repeats are taken out are those of a
    search of the points left alone: from the spare neighbours (3 repeats of a point),
    by brute force for the points left short (20 repeats, more than the spare), or by a
    second search of every point where more are short than are searched alone."""
    points = on_subspace(300, 3, 10, seed=5).astype(np.float16)
    columns = (np.arange(1, copies + 1)[:, None] >> np.arange(10)) & 1  # a set each
    nudged = np.where(columns, np.nextafter(points[:1], np.float16(np.inf)), points[:1])
    monkeypatch.setattr(dimension, "SHORT_POINTS_SEARCHED", searched_alone)
    searched = []
    monkeypatch.setattr(dimension, "_nearest", _counted(dimension._nearest, searched))
    found = dimension.neighbourhoods(np.concatenate([points, nudged.astype(np.float16)]), 8)
    np.testing.assert_array_equal(found.points, points.astype(np.float64))
    alone = dimension._nearest.__wrapped__(points.astype(np.float64), 8)[0]
    np.testing.assert_allclose(found.distances, alone, rtol=1e-12)
    rows = np.arange(len(found.points))[:, None]  # each neighbour's row among those kept
    gaps = np.linalg.norm(found.points[found.indices] - found.points[rows], axis=2)
    np.testing.assert_allclose(gaps, alone, rtol=1e-12)
    assert len(searched) == (2 if searched_alone == 0 else 1)


def _counted(function, calls: list):
    """`function`, each call's second argument (k) kept in `calls`."""

    def counted(*arguments, **keywords):
        calls.append(arguments[1])
        return function(*arguments, **keywords)

    counted.__wrapped__ = function
    return counted


LABELS = {"model": "m", "layer": 1, "n_layers": 2, "layer_output": "block 1"}


def test_rows_an_ulp_apart_in_float16_are_one_point_as_exact_repeats_are():
    """The GPU case: repeats of a row stored in float16 that came out one unit in the last
    place apart in a few elements are removed like exact repeats, and the first of each is
    kept; rows farther apart than rounding stay."""
    points = on_subspace(300, 3, 10, seed=2).astype(np.float16)
    nudged = points[:40].copy()
    nudged[:, ::3] = np.nextafter(nudged[:, ::3], np.float16(np.inf))
    repeated = np.concatenate([points, nudged, points[:10]])
    kept = dimension.neighbourhoods(repeated, 8).points
    np.testing.assert_array_equal(kept, points.astype(np.float64))
    apart = points[:40] * np.float16(1.01)  # 1 % off: other points, not rounding
    assert len(dimension.neighbourhoods(np.concatenate([points, apart]), 8).points) == 340
    settings = typed(
        {
            "seed": 0,
            "confidence": 0.95,
            "sample_size": None,
            "intrinsic_dimension": {"min_points": 50},
        }
    )
    exact = intrinsic_dimension(np.concatenate([points, points[:40]]), settings, **LABELS)
    rounded = intrinsic_dimension(repeated, settings, **LABELS)
    assert rounded.summary == exact.summary


def test_dimension_settings_refuse_what_cannot_be_estimated():
    from contextuality.errors import ConfigError

    with pytest.raises(ConfigError, match="plateau_width"):
        dimension.DimensionSettings(plateau_width=1)
    with pytest.raises(ConfigError, match="plateau_tolerance"):
        dimension.DimensionSettings(plateau_tolerance=0)
    with pytest.raises(ConfigError, match="range_max"):
        dimension.DimensionSettings(range_max=1)


def test_the_geometry_settings_are_the_workflow_s_typed_and_checked():
    """The workflow's geometry settings make a typed record whose `config` is what the
    outputs hash; a key it does not know or one without a default here is refused, and a
    nested setting is checked as it is made."""
    from test_workflow import _with_defaults

    from contextuality import workflow
    from contextuality.errors import ConfigError

    from conftest import shipped_config

    config = _with_defaults(shipped_config())
    found = workflow.geometry_settings(config)
    settings = GeometrySettings.from_config(found)
    assert settings.config == found and settings.seed == config["measures"]["seed"]
    assert settings.alignment.k == config["geometry"]["alignment"]["k"]
    # Each study's jobs are given its own block alone: a change of the other reruns none.
    dimension = workflow.geometry_settings(config, "intrinsic_dimension")
    alignment = workflow.geometry_settings(config, "alignment")
    assert "alignment" not in dimension and "intrinsic_dimension" not in alignment
    for study, alone in (("intrinsic_dimension", dimension), ("alignment", alignment)):
        assert getattr(GeometrySettings.from_config(alone), study) == getattr(settings, study)
    with pytest.raises(ValueError, match="geometry study 'cka'"):
        workflow.geometry_settings(config, "cka")
    with pytest.raises(ConfigError, match="unknown transforms"):
        GeometrySettings.from_config(found | {"transforms": ["none"]})
    with pytest.raises(ConfigError, match="missing sample_size"):
        GeometrySettings.from_config({key: found[key] for key in ("seed", "confidence")})
    with pytest.raises(ConfigError, match="geometry.alignment.k"):
        GeometrySettings.from_config(found | {"alignment": {"k": 0}})


N_ROWS, WIDTH = 400, 6


def write_model(directory, name, layers, checksum, missing_row=None):
    """Float16 shards of `layers` (layer → rows) with the attributes an extraction records."""
    paths = {layer: directory / f"{name}_layer_{layer}.h5" for layer in layers}
    attributes = {
        "model": name,
        "model_id": f"test/{name}",
        "model_revision": "r1",
        "pooling": "mean",
        "corpus_checksum": "c",
        "index_checksum": checksum,
        "config_hash": f"h-{name}",
        "n_layers": max(layers),
        "layer_conventions": json.dumps({"layer_0": "embedding output", "last_layer": "last"}),
    }
    stacked = np.stack(list(layers.values())).astype(np.float16)
    if missing_row is not None:
        stacked[:, missing_row] = np.nan
    with ShardSetWriter(paths, N_ROWS, WIDTH, "float16", attributes) as writer:
        writer.write(0, stacked)
        writer.commit({})
    return ModelLayers(name, {layer: [path] for layer, path in paths.items()})


@pytest.fixture
def stored(tmp_path):
    """Two models on one index of 400 rows (40 sentences of 10 words): ``a`` (two layers
    of points near a 3-D subspace, one row without a vector), and ``b``, a rotated,
    scaled copy of a's layer 1 and an unrelated layer."""
    rng = np.random.default_rng(5)
    occurrences = pd.DataFrame(
        {
            "occurrence_id": np.arange(N_ROWS),
            "sentence_id": np.repeat(np.arange(N_ROWS // 10), 10),
            "position": np.tile(np.arange(10), N_ROWS // 10),
            "word_id": np.zeros(N_ROWS, dtype=np.int64),
            "word": "w",
        }
    )
    checksum = index_checksum(occurrences)
    first = on_subspace(N_ROWS, 3, WIDTH, seed=3)
    second = np.tanh(first @ rng.normal(size=(WIDTH, WIDTH)))
    model_a = write_model(tmp_path, "a", {0: first, 1: second}, checksum, missing_row=17)
    rotation = ortho_group.rvs(WIDTH, random_state=4)
    copies = {0: 2.0 * second @ rotation, 1: rng.normal(size=(N_ROWS, WIDTH))}
    model_b = write_model(tmp_path, "b", copies, checksum)
    summary = tmp_path / "index.json"
    write_json(summary, {"index_checksum": checksum, "n_occurrences": N_ROWS})
    index = IndexFiles(tmp_path / "occurrences.parquet", tmp_path / "vocab.parquet", summary)
    write_parquet(occurrences, index.occurrences, {})
    settings = {
        "sample_size": 300,
        "seed": 0,
        "confidence": 0.95,
        # 300 points: TwoNN on 150 and 75 moves by up to 18 %
        "intrinsic_dimension": {"min_points": 50, "plateau_tolerance": 0.25},
    }
    return model_a, model_b, index, settings, (first, second, copies)


def outputs(directory, stem: str) -> tuple:
    """The three files a model's layer geometry writes, named after `stem`."""
    return tuple(
        directory / f"{stem}.{name}"
        for name in ("dimension.json", "dimension_scales.parquet", "alignment.parquet")
    )


def test_a_model_s_geometry_from_its_shards(stored, tmp_path):
    model_a, _, index, settings, (first, second, _) = stored
    curves_path = tmp_path / "dimension_scales.parquet"
    table = steps.layer_geometry(
        model_a,
        index,
        typed(settings),
        tmp_path / "dimension.json",
        curves_path,
        tmp_path / "alignment.parquet",
    )
    assert set(table["model_b"]) == {"a", "word_identity", "word_position"}
    table = table[table["model_b"] == "a"]
    rows = sample_rows(N_ROWS, 300, 0)
    kept = rows[rows != 17]  # the row without a vector is left out of every layer
    for occurrences, chosen in (("all", kept), ("position>0", kept[kept % 10 > 0])):
        read = [layer.astype(np.float16).astype(np.float64)[chosen] for layer in (first, second)]
        expected = [[kernel_cka(x, y) for y in read] for x in read]
        part = table[table["occurrences"] == occurrences]
        grid = part.pivot(index="layer_a", columns="layer_b", values="cka").to_numpy()
        np.testing.assert_allclose(grid, expected, atol=1e-4)
        assert set(part["n_rows"]) == {len(chosen)} and part["sampled"].all()
    provenance = read_provenance(tmp_path / "alignment.parquet")
    assert provenance["models"][0]["model_id"] == "test/a"
    assert (provenance["resumed_parts"], provenance["resumed_seconds"]) == (0, 0.0)  # no stop
    assert not (tmp_path / "alignment.parquet.resume").exists()
    summaries = read_json(tmp_path / "dimension.json")["layers"]
    assert [summary["layer"] for summary in summaries] == [0, 1]
    assert summaries[0]["layer_output"] == "embedding output"
    twonn = summaries[0]["measures"]["intrinsic_dimension[twonn]"]
    assert twonn["raw_low"] <= twonn["raw"] <= twonn["raw_high"]
    assert twonn["raw"] == pytest.approx(3, rel=0.3)  # the points lie on a 3-D subspace
    assert (twonn["interval"], twonn["n"]) == ("plateau range", len(kept))
    curves = pd.read_parquet(curves_path)
    assert list(curves.columns) == list(CURVE_COLUMNS)
    layer_0 = curves[(curves["layer"] == 0) & (curves["estimator"] == "twonn")]
    assert list(layer_0["scale"]) == [len(kept), len(kept) // 2, len(kept) // 4]
    flat = layer_0[layer_0["on_plateau"]]
    assert flat["dimension"].mean() == pytest.approx(twonn["raw"])
    assert twonn["scale"] == f"n={flat['scale'].min()}–{flat['scale'].max()}"
    assert read_provenance(curves_path)["step"] == "layer_dimension"
    alone = steps.ModelLayers(model_a.name, {1: model_a.shards[1]}, model_a.settings)
    one = tmp_path / "layer_1"
    [layer_1] = steps.layer_dimension(
        alone, index, typed(settings), f"{one}.json", f"{one}.parquet"
    )  # the workflow's job of one layer: the same sample, the same values
    assert layer_1["measures"] == summaries[1]["measures"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(f"{one}.parquet"), curves[curves["layer"] == 1].reset_index(drop=True)
    )
    measures = steps.measures_table([], tmp_path / "measures.tsv", [tmp_path / "dimension.json"])
    assert set(measures["measure"]) == {"intrinsic_dimension[twonn]", "intrinsic_dimension[gride]"}
    assert set(measures["transform"]) == {"none"}
    gathered = steps.dimension_scales_table([curves_path], tmp_path / "dimension_scales.tsv")
    assert len(gathered) == len(curves)


def test_alignment_between_models_is_on_the_same_occurrences(stored, tmp_path):
    model_a, model_b, index, settings, _ = stored
    found = steps.alignment_between_models(
        model_a,
        model_b,
        index,
        typed(settings),
        tmp_path / "ab.parquet",
        tmp_path / "ab.best.parquet",
    )
    table = found.table
    found = table.set_index(["occurrences", "layer_a", "layer_b"])
    for occurrences in ("all", "position>0"):
        copy, unrelated = found.loc[occurrences, 1, 0], found.loc[occurrences, 1, 1]
        assert copy["cka"] == pytest.approx(1.0, abs=1e-3)  # a's layer 1, rotated and scaled
        assert copy["procrustes"] == pytest.approx(0.0, abs=0.05)  # float16 rounding only
        assert copy["mutual_knn"] > 0.9 and copy["cknna"] > 0.9
        assert unrelated["cka"] < 0.2 and unrelated["mutual_knn"] < 0.2
        assert unrelated["procrustes"] > 1.0
        assert copy["null_mutual_knn"] < 0.2 and copy["null_procrustes"] > 1.0
    assert set(table["k"]) == {10}
    whole = steps.alignment_between_models(
        model_a,
        model_b,
        index,
        typed(settings | {"sample_size": None}),
        tmp_path / "all.parquet",
        tmp_path / "all.best.parquet",
    ).table
    every = whole[whole["occurrences"] == "all"]
    assert set(every["n_rows"]) == {N_ROWS - 1} and not whole["sampled"].any()
    gathered = steps.alignment_table(
        [tmp_path / "ab.parquet"],
        [tmp_path / "ab.best.parquet"],
        tmp_path / "alignment.tsv",
        tmp_path / "best_layers.tsv",
    )
    assert len(gathered) == 2 * 4
    assert list(pd.read_csv(tmp_path / "alignment.tsv", sep="\t").columns) == list(gathered.columns)
    best = pd.read_csv(tmp_path / "best_layers.tsv", sep="\t")
    best = best[best["occurrences"] == "all"].set_index(["model", "layer", "measure"])
    for measure in (record.name for record in ALIGNMENT_MEASURES):
        assert best.loc[("a", 1, measure), "best_layer"] == 0, measure  # its rotated copy
        assert best.loc[("b", 0, measure), "best_layer"] == 1, measure
        assert best.loc[("b", 0, measure), "depth"] == 0.0
        assert best.loc[("b", 0, measure), "best_depth"] == 1.0


def test_the_alignment_alone_is_the_table_the_layer_geometry_writes(stored, tmp_path):
    """`steps.baseline_alignment` (a study of the alignment between models alone) gives
    the word baselines' rows of `steps.layer_geometry`, and `steps.layer_alignment` (the
    alignment within a model, without the intrinsic dimension) its whole alignment table,
    to the last bit, on the same sample; `steps.paired_layer_alignment`, that table's rows
    of each layer with the next."""
    model_a, _, index, settings, _ = stored
    whole = steps.layer_geometry(model_a, index, typed(settings), *outputs(tmp_path, "whole"))
    alone = steps.baseline_alignment(model_a, index, typed(settings))
    expected = whole[whole["model_b"] != "a"].reset_index(drop=True)
    assert set(alone["model_b"]) == {"word_identity", "word_position"}
    assert set(alone["occurrences"]) == {"all"}
    pd.testing.assert_frame_equal(alone, expected)
    within = steps.layer_alignment(model_a, index, typed(settings))
    assert set(within["model_b"]) == {"a", "word_identity", "word_position"}
    pd.testing.assert_frame_equal(within, whole)
    adjacent = steps.paired_layer_alignment(model_a, None, "adjacent", index, typed(settings))
    pair = whole[(whole["model_b"] == "a") & (whole["layer_a"] == 0) & (whole["layer_b"] == 1)]
    assert len(adjacent) == 2  # the two layers, every occurrence and past the first words
    pd.testing.assert_frame_equal(adjacent, pair.reset_index(drop=True), rtol=1e-6, atol=1e-7)
    later = steps.paired_layer_alignment(
        model_a, None, "adjacent", index, typed(settings), occurrences=("position>0",)
    )
    expected = adjacent[adjacent["occurrences"] == "position>0"].reset_index(drop=True)
    pd.testing.assert_frame_equal(later, expected)


def test_a_stopped_alignment_job_keeps_its_parts_until_its_table_is_written(
    stored, tmp_path, monkeypatch
):
    """A job stopped before its table is written (here: at the write) leaves its finished
    parts in ``<output>.resume``; the job run again reads them, computes no resample,
    writes the table a run never stopped writes, and removes the folder."""
    from contextuality.geometry import alignment as alignment_module
    from contextuality.steps import geometry as geometry_step

    model_a, _, index, settings, _ = stored
    output = tmp_path / "alignment.parquet"
    expected = steps.layer_alignment(model_a, index, typed(settings))
    writing = geometry_step.write_parquet

    def stopped(*arguments, **keywords):
        raise KeyboardInterrupt

    monkeypatch.setattr(geometry_step, "write_parquet", stopped)
    with pytest.raises(KeyboardInterrupt):
        steps.layer_alignment(model_a, index, typed(settings), output=output)
    folder = tmp_path / "alignment.parquet.resume"
    assert not output.exists() and len(list(folder.glob("*/*/*.npz"))) > 0
    monkeypatch.setattr(geometry_step, "write_parquet", writing)
    computed = []
    monkeypatch.setattr(alignment_module, "measure_grids", lambda *a, **k: computed.append(1))
    again = steps.layer_alignment(model_a, index, typed(settings), output=output)
    assert not computed and not folder.exists()
    pd.testing.assert_frame_equal(again, expected)
    pd.testing.assert_frame_equal(pd.read_parquet(output), expected)


def test_every_cka_comes_with_its_debiased_form_and_a_permutation_null(stored, tmp_path):
    """The debiased values are those of the n × n estimator on the same rows; the null
    between two layers is both forms on rows paired at random, seeded: the same seed
    gives the same null, and the debiased null sits near 0 where the biased null does
    not; a layer with itself has none."""
    model_a, model_b, index, settings, (first, second, _) = stored
    table = steps.layer_geometry(model_a, index, typed(settings), *outputs(tmp_path, "first"))
    table = table[table["model_b"] == "a"]
    rows = sample_rows(N_ROWS, 300, 0)
    kept = rows[rows != 17]
    read = [layer.astype(np.float16).astype(np.float64)[kept] for layer in (first, second)]
    every = table[table["occurrences"] == "all"].set_index(["layer_a", "layer_b"])
    assert every.loc[(0, 1), "cka_debiased"] == pytest.approx(
        debiased_kernel_cka(read[0] - read[0].mean(0), read[1] - read[1].mean(0)), abs=1e-4
    )
    assert every.loc[(0, 0), "cka_debiased"] == pytest.approx(1.0, abs=1e-6)
    between = every.loc[[(0, 1), (1, 0)]]
    assert (between["null_cka"] < between["cka"]).all()
    assert (between["null_cka"] > 0.001).all()  # the biased null is not 0
    assert (between["null_cka_debiased"].abs() < 0.02).all()
    assert every.loc[[(0, 0), (1, 1)], "null_cka"].isna().all()  # a layer with itself
    again = steps.layer_geometry(model_a, index, typed(settings), *outputs(tmp_path, "again"))
    pd.testing.assert_frame_equal(again[again["model_b"] == "a"], table)
    other = steps.layer_geometry(
        model_a, index, typed(settings | {"seed": 1}), *outputs(tmp_path, "other")
    )
    other = other[other["model_b"] == "a"]
    assert other["null_cka"].isna().equals(table["null_cka"].isna())
    assert not np.allclose(other["null_cka"].dropna(), table["null_cka"].dropna())


def test_a_model_extracted_otherwise_is_refused(stored, tmp_path):
    model_a, _, index, settings, _ = stored
    extracted_otherwise = backends.model_settings("a", {"source": "test/a", "pooling": "first"})
    changed = ModelLayers("a", model_a.shards, extracted_otherwise)
    with pytest.raises(Exception, match="pooling|model_id"):
        steps.layer_geometry(changed, index, typed(settings), *outputs(tmp_path, "changed"))
    assert not (tmp_path / "changed.dimension.json").exists()


def test_a_shard_of_another_layer_is_refused(stored, tmp_path):
    """Layer 1's shard given as layer 0's (``cp layer_1.h5 layer_0.h5``): refused before
    anything is written, instead of measured as layer 0."""
    from contextuality.errors import ShardMismatchError

    model_a, _, index, settings, _ = stored
    swapped = ModelLayers("a", {0: model_a.shards[1], 1: model_a.shards[1]}, model_a.settings)
    with pytest.raises(ShardMismatchError, match="holds layer 1, not layer 0"):
        steps.layer_geometry(swapped, index, typed(settings), *outputs(tmp_path, "swapped"))
    assert not (tmp_path / "swapped.dimension.json").exists()


def test_an_intrinsic_dimension_from_few_points_or_no_plateau_is_said_out_loud(
    stored, tmp_path, caplog
):
    from contextuality.geometry.dimension import MIN_DIMENSION_POINTS

    model_a, _, index, settings, _ = stored
    written = outputs(tmp_path, "few")
    with caplog.at_level("WARNING"):
        steps.layer_geometry(model_a, index, typed(settings), *written)
    assert "intrinsic dimension from" not in caplog.text
    few = settings | {"sample_size": 40}
    with caplog.at_level("WARNING"):
        steps.layer_geometry(model_a, index, typed(few), *written)
    expected = "a layer 0 (none): intrinsic dimension from 40 distinct points (fewer than "
    assert expected in caplog.text
    assert f"{MIN_DIMENSION_POINTS})" in caplog.text
    caplog.clear()
    strict = settings | {"intrinsic_dimension": {"min_points": 50, "plateau_tolerance": 1e-9}}
    with caplog.at_level("WARNING"):
        steps.layer_geometry(model_a, index, typed(strict), *written)
    assert "a layer 0 (none): no plateau in the twonn and gride curves" in caplog.text
    measures = read_json(written[0])["layers"][0]["measures"]["intrinsic_dimension[gride]"]
    assert measures["raw"] is None and measures["scale"] == "no plateau"
