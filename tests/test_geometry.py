"""Linear CKA between layers and models (`linear_cka`), intrinsic dimension (`dimension`)
and the steps that compute them from shards (`steps.geometry`)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ortho_group

from contextuality import steps
from contextuality.corpus.index import IndexFiles, index_checksum
from contextuality.geometry import dimension, linear_cka
from contextuality.geometry.cka import sample_rows
from contextuality.provenance import read_json, write_json
from contextuality.steps.geometry import ModelLayers
from contextuality.storage.shards import ShardSetWriter
from contextuality.tables import read_provenance, write_parquet


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
    with pytest.raises(ValueError, match="two rows"):
        linear_cka.linear_cka(chunked([layers[1][:1]]), [6])


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


def test_debiased_cka_on_the_sum_of_two_sets_of_rows_is_that_of_all_rows(layers):
    """`plus` adds the norm sums too: the first 25 rows and the other 35 give all 60."""
    shift = (np.concatenate([layer.mean(axis=0) for layer in layers]),)
    first = linear_cka.CrossProducts([4, 6, 3], None, shift)
    rest = first.sibling()
    first.add([layer[:25] for layer in layers])
    rest.add([layer[25:] for layer in layers])
    np.testing.assert_allclose(
        first.plus(rest).debiased_cka(), _products(layers).debiased_cka(), atol=1e-6
    )


def on_subspace(n: int, intrinsic: int, ambient: int, seed: int) -> np.ndarray:
    """`n` points uniform in a unit cube of `intrinsic` dimensions, rotated into `ambient`."""
    rng = np.random.default_rng(seed)
    basis = ortho_group.rvs(ambient, random_state=seed)[:intrinsic]
    return rng.uniform(size=(n, intrinsic)) @ basis + 5.0


@pytest.mark.parametrize("intrinsic", [2, 5])
def test_intrinsic_dimension_of_data_of_known_dimension(intrinsic):
    points = on_subspace(4000, intrinsic, 40, seed=intrinsic)
    settings = dimension.DimensionSettings(sample_size=1000, samples=4, gride_scale=2)
    found, distinct = dimension.sampled_dimensions(points, settings, np.random.default_rng(0))
    assert list(distinct) == [1000] * 4
    for name in dimension.ESTIMATORS:
        assert len(found[name]) == 4
        assert np.mean(found[name]) == pytest.approx(intrinsic, rel=0.15), name
        assert np.ptp(found[name]) > 0  # independent samples


def test_duplicates_are_removed_before_the_estimators_see_them():
    points = on_subspace(300, 3, 10, seed=1)
    repeated = np.concatenate([points, points[:200], points[:50]])
    assert np.array_equal(dimension.distinct_rows(repeated), points)
    settings = dimension.DimensionSettings(sample_size=550, samples=1, gride_scale=2)
    with_repeats, distinct = dimension.sampled_dimensions(
        repeated, settings, np.random.default_rng(0)
    )
    alone, _ = dimension.sampled_dimensions(points, settings, np.random.default_rng(0))
    assert list(distinct) == [300]  # all 550 rows drawn, 250 of them repeats
    assert with_repeats["twonn"][0] == pytest.approx(alone["twonn"][0])
    few = np.repeat(points[:4], 10, axis=0)  # 4 distinct points: GRIDE at k = 2 needs 5
    found, distinct = dimension.sampled_dimensions(few, settings, np.random.default_rng(0))
    assert list(distinct) == [4]
    assert all(np.isnan(values).all() for values in found.values())


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
        "intrinsic_dimension": {"sample_size": 200, "samples": 3, "gride_scale": 2},
    }
    return model_a, model_b, index, settings, (first, second, copies)


def test_a_model_s_geometry_from_its_shards(stored, tmp_path):
    model_a, _, index, settings, (first, second, _) = stored
    table = steps.layer_geometry(
        model_a, index, settings, tmp_path / "dimension.json", tmp_path / "cka.parquet"
    )
    rows = sample_rows(N_ROWS, 300, 0)
    kept = rows[rows != 17]  # the row without a vector is left out of every layer
    for occurrences, chosen in (("all", kept), ("position>0", kept[kept % 10 > 0])):
        read = [layer.astype(np.float16).astype(np.float64)[chosen] for layer in (first, second)]
        expected = [[kernel_cka(x, y) for y in read] for x in read]
        part = table[table["occurrences"] == occurrences]
        grid = part.pivot(index="layer_a", columns="layer_b", values="cka").to_numpy()
        np.testing.assert_allclose(grid, expected, atol=1e-4)
        assert set(part["n_rows"]) == {len(chosen)} and part["sampled"].all()
    assert read_provenance(tmp_path / "cka.parquet")["models"][0]["model_id"] == "test/a"
    summaries = read_json(tmp_path / "dimension.json")["layers"]
    assert [summary["layer"] for summary in summaries] == [0, 1]
    assert summaries[0]["layer_output"] == "embedding output"
    twonn = summaries[0]["measures"]["intrinsic_dimension[twonn]"]
    assert twonn["raw_low"] <= twonn["raw"] <= twonn["raw_high"]
    assert twonn["raw"] == pytest.approx(3, rel=0.3)  # the points lie on a 3-D subspace
    measures = steps.measures_table([], tmp_path / "measures.tsv", [tmp_path / "dimension.json"])
    assert set(measures["measure"]) == {"intrinsic_dimension[twonn]", "intrinsic_dimension[gride]"}
    assert set(measures["transform"]) == {"none"}


def test_cka_between_models_is_on_the_same_occurrences(stored, tmp_path):
    model_a, model_b, index, settings, _ = stored
    table = steps.cka_between_models(model_a, model_b, index, settings, tmp_path / "ab.parquet")
    found = table.set_index(["occurrences", "layer_a", "layer_b"])["cka"]
    for occurrences in ("all", "position>0"):
        assert found[occurrences, 1, 0] == pytest.approx(1.0, abs=1e-3)  # a's layer 1, rotated
        assert found[occurrences, 1, 1] < 0.2
    whole = steps.cka_between_models(
        model_a, model_b, index, settings | {"sample_size": None}, tmp_path / "all.parquet"
    )
    every = whole[whole["occurrences"] == "all"]
    assert set(every["n_rows"]) == {N_ROWS - 1} and not whole["sampled"].any()
    gathered = steps.cka_table([tmp_path / "ab.parquet"], tmp_path / "cka.tsv")
    assert len(gathered) == 2 * 4
    assert list(pd.read_csv(tmp_path / "cka.tsv", sep="\t").columns) == list(gathered.columns)


def test_every_cka_comes_with_its_debiased_form_and_a_permutation_null(stored, tmp_path):
    """The debiased values are those of the n × n estimator on the same rows; the null is
    both forms on rows paired at random, seeded: the same seed gives the same null, and
    the debiased null sits near 0 where the biased null does not."""
    model_a, model_b, index, settings, (first, second, _) = stored
    table = steps.layer_geometry(
        model_a, index, settings, tmp_path / "dimension.json", tmp_path / "cka.parquet"
    )
    rows = sample_rows(N_ROWS, 300, 0)
    kept = rows[rows != 17]
    read = [layer.astype(np.float16).astype(np.float64)[kept] for layer in (first, second)]
    every = table[table["occurrences"] == "all"].set_index(["layer_a", "layer_b"])
    assert every.loc[(0, 1), "cka_debiased"] == pytest.approx(
        debiased_kernel_cka(read[0] - read[0].mean(0), read[1] - read[1].mean(0)), abs=1e-4
    )
    assert every.loc[(0, 0), "cka_debiased"] == pytest.approx(1.0, abs=1e-6)
    assert (every["null_cka"] < every["cka"]).all()
    assert (every["null_cka_debiased"].abs() < 0.02).all()
    assert every.loc[(0, 0), "null_cka"] > 0.001  # the biased null of a layer with itself
    again = steps.layer_geometry(
        model_a, index, settings, tmp_path / "again.json", tmp_path / "again.parquet"
    )
    pd.testing.assert_frame_equal(again, table)
    other = steps.layer_geometry(
        model_a, index, settings | {"seed": 1}, tmp_path / "o.json", tmp_path / "o.parquet"
    )
    assert not np.allclose(other["null_cka"], table["null_cka"])


def test_the_random_pairing_permutes_the_given_rows_only():
    from contextuality.geometry.cka import random_pairing

    kept = np.flatnonzero(np.arange(50) % 7 != 3)
    pairing = random_pairing(kept, 50, np.random.default_rng(2))
    assert sorted(pairing) == list(range(50))  # a permutation
    assert set(pairing[kept]) == set(kept)
    others = np.setdiff1d(np.arange(50), kept)
    assert np.array_equal(pairing[others], others)
    assert np.mean(pairing[kept] != kept) > 0.8


def test_a_model_extracted_otherwise_is_refused(stored, tmp_path):
    model_a, _, index, settings, _ = stored
    changed = ModelLayers("a", model_a.shards, {"source": "test/a", "pooling": "first"})
    with pytest.raises(Exception, match="pooling|model_id"):
        steps.layer_geometry(
            changed, index, settings, tmp_path / "dimension.json", tmp_path / "cka.parquet"
        )
    assert not (tmp_path / "dimension.json").exists()


def test_a_shard_of_another_layer_is_refused(stored, tmp_path):
    """Layer 1's shard given as layer 0's (``cp layer_1.h5 layer_0.h5``): refused before
    anything is written, instead of measured as layer 0."""
    from contextuality.errors import ShardMismatchError

    model_a, _, index, settings, _ = stored
    swapped = ModelLayers("a", {0: model_a.shards[1], 1: model_a.shards[1]}, model_a.settings)
    with pytest.raises(ShardMismatchError, match="holds layer 1, not layer 0"):
        steps.layer_geometry(
            swapped, index, settings, tmp_path / "dimension.json", tmp_path / "cka.parquet"
        )
    assert not (tmp_path / "dimension.json").exists()


def test_an_intrinsic_dimension_from_few_points_is_said_out_loud(stored, tmp_path, caplog):
    from contextuality.geometry.dimension import MIN_DIMENSION_POINTS

    model_a, _, index, settings, _ = stored
    outputs = tmp_path / "dimension.json", tmp_path / "cka.parquet"
    with caplog.at_level("WARNING"):
        steps.layer_geometry(model_a, index, settings, *outputs)
    assert "intrinsic dimension from" not in caplog.text
    few = settings | {"intrinsic_dimension": {"sample_size": 40, "samples": 2, "gride_scale": 2}}
    with caplog.at_level("WARNING"):
        steps.layer_geometry(model_a, index, few, *outputs)
    assert "a layer 0: intrinsic dimension from 40 distinct points (fewer than " in caplog.text
    assert f"{MIN_DIMENSION_POINTS})" in caplog.text


def test_products_of_two_sets_of_rows_add_up_to_those_of_all(layers):
    shift = (np.concatenate([layer.mean(axis=0) for layer in layers]),)
    some = linear_cka.CrossProducts([4, 6, 3], None, shift)
    others = some.sibling()
    for products, rows in ((some, slice(0, 25)), (others, slice(25, 60))):
        products.add([layer[rows] for layer in layers])
    together = some.plus(others)
    assert together.n_rows == 60
    np.testing.assert_allclose(
        together.cka(), linear_cka.linear_cka(chunked(layers), [4, 6, 3]), atol=1e-6
    )
    stranger = linear_cka.CrossProducts([4, 6, 3], None)
    stranger.add([layer[:5] for layer in layers])
    with pytest.raises(ValueError, match="sibling"):
        some.plus(stranger)
