"""What an alignment value is worth: the bootstrap over sentences (weights that are copies
of rows), the permutation calibration (calibrated-similarity's own functions on the same
permutations), and each best match's margin, stability and null of choosing."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from contextuality.configuration.random_streams import generator
from contextuality.geometry import row_products
from contextuality.geometry.alignment import (
    AlignmentSettings,
    SampledLayers,
    SampleRows,
    alignment_between,
    measure_grids,
)
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES, alignment_measure
from contextuality.geometry.best_layers import best_matching_layers
from contextuality.geometry.linear_cka import CrossProducts
from contextuality.geometry.neighbours import (
    cknna,
    cosine_neighbours,
    hsic_unbiased,
    mutual_knn,
)
from contextuality.geometry.resampling import (
    ResampledAlignment,
    bootstrap_interval,
    calibrate,
    sentence_weights,
)
from contextuality.geometry.row_products import layer_products, shuffled_products


def _related_layers(
    rng: np.random.Generator, n: int, count: int, width: int, signal: np.ndarray | None = None
) -> list[np.ndarray]:
    """`count` layers of `n` rows that share a 4-dimensional `signal` (drawn when None),
    each with its own noise, more in each later layer."""
    signal = rng.normal(size=(n, 4)) if signal is None else signal
    return [
        signal @ rng.normal(size=(4, width)) + rng.normal(scale=0.5 + layer, size=(n, width))
        for layer in range(count)
    ]


@pytest.mark.parametrize("same", [True, False])
def test_weighted_cross_products_are_those_of_the_copied_rows(same):
    """A bootstrap draw's weights count each row that many times: every estimator on the
    weighted sums equals the estimator on the rows copied (a weight of 0 drops the row)."""
    rng = np.random.default_rng(3)
    left = _related_layers(rng, 60, 2, 5)
    right = None if same else _related_layers(rng, 60, 3, 4)
    weights = rng.integers(0, 4, 60)
    copies = np.repeat(np.arange(60), weights)
    widths = (
        [5, 5],
        None if same else [4, 4, 4],
    )
    weighted = CrossProducts(*widths)
    weighted.add(left, right, weights)
    copied = CrossProducts(*widths)
    copied.add([x[copies] for x in left], None if same else [y[copies] for y in right])
    assert weighted.n_rows == copied.n_rows == weights.sum()
    for estimator in ("cka", "debiased_cka", "procrustes"):
        # Procrustes of a layer with itself: arccos near 1 turns 1e-16 into 1e-8.
        np.testing.assert_allclose(
            getattr(weighted, estimator)(), getattr(copied, estimator)(), atol=1e-7
        )


@pytest.mark.parametrize("right_kind", ["same", "dense", "sparse"])
def test_a_permutation_s_products_keep_the_self_products_of_the_values(right_kind):
    """A null's products re-paired from the values' (only the products between the two
    sides multiplied again) give every estimator the values it gets from products of
    the permuted rows computed whole: within one model, between two, and against a
    sparse word baseline; all measures through `measure_grids` too."""
    rng = np.random.default_rng(11)
    rows = np.sort(rng.choice(90, 70, replace=False))
    left = _sampled([layer + 40.0 for layer in _related_layers(rng, 90, 3, 5)])
    right = {
        "same": None,
        "dense": _sampled(_related_layers(rng, 90, 2, 4)),
        "sparse": SampledLayers({0: sparse.csr_matrix(np.eye(6)[rng.integers(0, 6, 90)])}, {0: {}}),
    }[right_kind]
    pairing = rng.permutation(len(rows))
    other = left if right is None else right
    values = layer_products(left, right, rows)
    whole = layer_products(left, other, rows, pairing, precision=np.float32)
    repaired = layer_products(left, other, rows, pairing, None, np.float32, values)
    for estimator in ("cka", "debiased_cka", "procrustes"):
        np.testing.assert_allclose(
            getattr(repaired, estimator)(), getattr(whole, estimator)(), rtol=1e-5, atol=1e-6
        )
    searched = None
    grids = measure_grids(left, right, rows, searched, pairing, unpaired=values)
    computed = measure_grids(left, right, rows, searched, pairing)
    for name, grid in computed.items():
        np.testing.assert_allclose(grids[name], grid, rtol=1e-5, atol=1e-6, err_msg=name)


def test_re_paired_products_refuse_weights_fewer_rows_and_a_second_re_pairing():
    rng = np.random.default_rng(12)
    layers = _related_layers(rng, 30, 2, 3)
    values = CrossProducts([3, 3], None)
    values.add(layers)
    with pytest.raises(ValueError, match="without weights"):
        values.repaired().add(layers, layers, np.ones(30))
    fewer = values.repaired()
    fewer.add([layer[:20] for layer in layers], [layer[:20] for layer in layers])
    with pytest.raises(ValueError, match="keep 30 rows and were given 20"):
        fewer.cka()
    with pytest.raises(ValueError, match="once each"):
        values.repaired().repaired()


def test_a_shuffle_s_products_keep_each_layer_s_products_with_itself(monkeypatch):
    """An unordered null's products (each layer's rows in an order of its own, only the
    products between two layers multiplied, each pair once, gathered a chunk at a time)
    give every estimator the values of the shuffled layers' products computed whole."""
    monkeypatch.setattr(row_products, "CKA_CHUNK_ROWS", 16)
    rng = np.random.default_rng(13)
    rows = np.sort(rng.choice(90, 70, replace=False))
    layers = _sampled(
        [layer + 40.0 * index for index, layer in enumerate(_related_layers(rng, 90, 4, 5))]
    )
    orders = [np.arange(len(rows)), *(rng.permutation(len(rows)) for _ in range(3))]
    values = layer_products(layers, None, rows)
    shuffled = {
        layer: vectors[rows[order]]
        for (layer, vectors), order in zip(layers.vectors.items(), orders, strict=True)
    }
    whole = layer_products(
        _sampled(list(shuffled.values())), None, np.arange(len(rows)), precision=np.float32
    )
    kept = shuffled_products(layers, rows, orders, values)
    for estimator in ("cka", "debiased_cka", "procrustes"):
        np.testing.assert_allclose(
            getattr(kept, estimator)(), getattr(whole, estimator)(), rtol=1e-5, atol=1e-6
        )
    # The shuffle moved the pairs: these are not the values' products.
    assert not np.allclose(kept.cka(), values.cka(), atol=1e-3)


def test_shuffled_products_refuse_two_sets_weights_and_another_count_of_rows():
    rng = np.random.default_rng(14)
    layers = _related_layers(rng, 30, 2, 3)
    values = CrossProducts([3, 3], None)
    values.add(layers)
    two_sets = CrossProducts([3, 3], [3, 3])
    two_sets.add(layers, layers)
    with pytest.raises(ValueError, match="one set's products"):
        two_sets.shuffled()
    with pytest.raises(ValueError, match="one set's products"):
        values.shuffled().shuffled()
    with pytest.raises(ValueError, match="without weights"):
        values.shuffled().add(layers, None, np.ones(30))
    fewer = values.shuffled()
    fewer.add([layer[:20] for layer in layers])
    with pytest.raises(ValueError, match="keep 30 rows and were given 20"):
        fewer.debiased_cka()
    more = values.shuffled()
    more.add(layers)
    with pytest.raises(ValueError, match="of 30 rows given more"):
        more.add(layers)


def test_weighted_neighbour_measures_are_those_of_copies_never_paired_with_each_other():
    """CKNNA's HSIC under weights equals HSIC_u of the kernels with each row copied (copies
    are not each other's neighbours: a row's own kernel entry is 0); mutual k-NN is the
    weighted mean of each row's share."""
    rng = np.random.default_rng(4)
    found = cosine_neighbours(rng.normal(size=(40, 6)), 5)
    other = cosine_neighbours(rng.normal(size=(40, 6)), 5)
    weights = rng.integers(0, 3, 40)
    copies = np.repeat(np.arange(40), weights)
    kernels = [found.own_kernel, other.own_kernel]
    expanded = [sparse.csr_matrix(kernel.toarray()[np.ix_(copies, copies)]) for kernel in kernels]
    assert hsic_unbiased(*kernels, weights) == pytest.approx(hsic_unbiased(*expanded), rel=1e-10)
    shares = np.asarray(found.mask.multiply(other.mask).sum(axis=1)).ravel() / 5
    assert mutual_knn(found, other, weights) == pytest.approx(shares[copies].mean())
    assert mutual_knn(found, other, np.ones(40)) == pytest.approx(mutual_knn(found, other))


@pytest.mark.parametrize("precision", [np.float64, np.float32])
def test_procrustes_within_one_set_is_that_of_the_set_against_a_copy(precision):
    """Within one set of layers only the upper blocks are decomposed (the lower are their
    transposes, a diagonal block's norm its trace): the same distances as the set against
    a copy of itself, where every block is decomposed, and exactly 0 on the diagonal
    (where the copy's float32 products, through arccos near 1, read up to 3e-4)."""
    rng = np.random.default_rng(8)
    layers = _related_layers(rng, 70, 3, 6)
    weights = rng.integers(0, 3, 70)
    within = CrossProducts([6, 6, 6], None, precision=precision)
    within.add(layers, None, weights)
    against = CrossProducts([6, 6, 6], [6, 6, 6], precision=precision)
    against.add(layers, [layer.copy() for layer in layers], weights)
    found, decomposed = within.procrustes(), against.procrustes()
    apart = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(found[apart], decomposed[apart], atol=1e-7)
    np.testing.assert_array_equal(np.diag(found), 0.0)
    np.testing.assert_array_equal(found, found.T)


def test_cknna_under_each_draw_scales_by_that_draw_s_own_hsic():
    """CKNNA keeps a layer's weighted own HSIC for the last draw it was asked for: a
    second draw (even in the same array, changed in place) gets its own, as fresh
    neighbours do."""
    rng = np.random.default_rng(9)
    vectors = [rng.normal(size=(50, 5)) for _ in range(2)]
    kept = [cosine_neighbours(layer, 4) for layer in vectors]
    weights = rng.integers(0, 3, 50)
    for _ in range(2):
        fresh = [cosine_neighbours(layer, 4) for layer in vectors]
        scale = np.sqrt(
            np.prod([hsic_unbiased(one.own_kernel, one.own_kernel, weights) for one in fresh])
        )
        both = fresh[0].mask.multiply(fresh[1].mask).tocsr()
        expected = hsic_unbiased(fresh[0].kernel(both), fresh[1].kernel(both), weights) / scale
        assert cknna(*kept, weights) == pytest.approx(expected, rel=1e-12)
        assert cknna(*kept, weights) == pytest.approx(cknna(*fresh, weights), rel=1e-12)
        weights[:] = rng.integers(0, 3, 50)
    assert cknna(*kept) == pytest.approx(cknna(*kept, np.ones(50)), rel=1e-12)


def test_a_bootstrap_draw_takes_whole_sentences():
    """Every row of a sentence counts alike; as many sentences are drawn as there are; the
    same generator state gives the same draws."""
    sentences = np.array([5, 5, 5, 9, 2, 2, 7, 7, 7, 7])
    draws = list(sentence_weights(sentences, 200, np.random.default_rng(0)))
    for counts in draws:
        for sentence in np.unique(sentences):
            assert len(set(counts[sentences == sentence])) == 1
        per_sentence = {sentence: counts[sentences == sentence][0] for sentence in sentences}
        assert sum(per_sentence.values()) == 4
    assert np.mean([counts[3] == 0 for counts in draws]) == pytest.approx((3 / 4) ** 4, abs=0.1)
    again = list(sentence_weights(sentences, 200, np.random.default_rng(0)))
    assert all(np.array_equal(a, b) for a, b in zip(draws, again, strict=True))


def test_the_interval_is_the_percentile_interval_less_the_bootstrap_s_bias():
    low, high, bias = bootstrap_interval(np.arange(101.0)[:, None], np.array([50.0]), 0.9)
    assert (low[0], high[0], bias[0]) == (pytest.approx(5.0), pytest.approx(95.0), 0.0)
    low, high, bias = bootstrap_interval(np.arange(101.0)[:, None], np.array([40.0]), 0.9)
    assert (low[0], high[0], bias[0]) == (pytest.approx(-5.0), pytest.approx(85.0), 10.0)
    low, high, bias = bootstrap_interval(np.empty((0, 2, 3)), np.zeros((2, 3)), 0.95)
    assert low.shape == (2, 3) and np.isnan(low).all() and np.isnan(high).all()


def test_calibration_by_hand_and_a_distance_as_its_negative():
    """τ is the ⌈0.95·(K+1)⌉-th smallest of the value and its K nulls; p = (1 + #null ≥ s)
    / (K + 1); calibrated = (s − τ) / (1 − τ), clipped to [0, 1]."""
    nulls = np.linspace(0.0, 0.38, 20)  # K = 19
    found = calibrate(np.array(0.5), nulls[:19], 0.95, 1.0)
    assert float(found.threshold) == pytest.approx(0.36)  # the 19th of 20: the largest null
    assert float(found.p_value) == pytest.approx(1 / 20)
    assert float(found.calibrated) == pytest.approx(0.14 / 0.64)
    again = calibrate(np.array(0.3), nulls[:19], 0.95, 1.0)  # among the nulls: τ above it
    assert float(again.threshold) == pytest.approx(0.34) and float(again.calibrated) == 0.0
    found = calibrate(np.array([0.5, 0.1]), np.tile(np.linspace(0, 0.2, 39)[:, None], 2), 0.95, 1.0)
    assert found.threshold[0] == pytest.approx(np.linspace(0, 0.2, 39)[37])
    assert found.calibrated[0] == pytest.approx(
        (0.5 - found.threshold[0]) / (1 - found.threshold[0])
    )
    assert found.p_value[1] == pytest.approx((1 + np.sum(np.linspace(0, 0.2, 39) >= 0.1)) / 40)
    distance = calibrate(np.array(0.2), np.full((19, 1), 1.4)[:, 0], 0.95, 0.0, distance=True)
    assert float(distance.calibrated) == pytest.approx((1.4 - 0.2) / 1.4)
    assert float(distance.p_value) == pytest.approx(1 / 20)
    assert np.isnan(calibrate(np.array(np.nan), np.zeros(5), 0.95, 1.0).calibrated)


def _constructed(values, nulls, draws) -> ResampledAlignment:
    names = [record.name for record in ALIGNMENT_MEASURES]
    arrays = [np.asarray(part, dtype=float) for part in (values, nulls, draws)]
    return ResampledAlignment(*({name: part for name in names} for part in arrays), k=10, n_rows=9)


def test_a_best_match_carries_its_margin_stability_and_the_null_of_choosing():
    """Layer 0 of model a against three layers of b: the best is b's layer 0, 0.2 ahead;
    it stays best in 3 of 4 draws; the null of choosing is the mean of each permutation's
    best of the row, not the chosen pair's null."""
    values = [[0.9, 0.7, 0.2]]
    nulls = [[[0.01, 0.05, 0.02]], [[0.03, 0.01, 0.04]]]
    draws = [[[0.9, 0.7, 0.2]], [[0.8, 0.85, 0.2]], [[0.95, 0.6, 0.3]], [[0.9, 0.1, 0.1]]]
    best = best_matching_layers(
        _constructed(values, nulls, draws), ("a", "b"), ([0], [0, 1, 2]), "all", 0.5
    )
    row = best[(best["model"] == "a") & (best["measure"] == "cka")].iloc[0]
    assert (row["best_layer"], row["value"]) == (0, 0.9)
    assert row["margin"] == pytest.approx(0.2)
    assert row["stays_best"] == pytest.approx(0.75)
    assert row["null"] == pytest.approx(0.02)
    assert row["best_null"] == pytest.approx(0.045)  # mean of 0.05 and 0.04
    assert row["best_p"] == pytest.approx(1 / 3)
    assert row["low"] <= 0.9 <= row["high"]
    distance = best[(best["model"] == "a") & (best["measure"] == "procrustes")].iloc[0]
    assert distance["best_layer"] == 2 and distance["margin"] == pytest.approx(0.5)
    assert distance["best_null"] == pytest.approx(0.01)  # the smallest of each row
    from_b = best[(best["model"] == "b") & (best["layer"] == 1) & (best["measure"] == "cka")]
    assert np.isnan(from_b["margin"].iloc[0])  # one candidate: no second best


def _sampled(layers: list[np.ndarray]) -> SampledLayers:
    return SampledLayers(dict(enumerate(layer.astype(np.float32) for layer in layers)), {})


def test_the_calibration_is_calibrated_similarity_s_on_the_same_permutations():
    """calibrated-similarity's ``calibrate`` for each pair of layers and ``calibrate_layers``
    (the maximum over a row) for each best match, given the permutations this package drew,
    give the same critical values, p-values and calibrated scores."""
    torch = pytest.importorskip("torch")
    package = pytest.importorskip(
        "calibrated_similarity", reason="pip install calibrated-similarity==0.1.1"
    )
    rng = np.random.default_rng(8)
    n = 120
    left, right = _related_layers(rng, n, 2, 6), _related_layers(rng, n, 3, 5)
    sample = SampleRows(np.ones(n, bool), np.arange(n), sampled=False)
    settings = AlignmentSettings(permutations=19, bootstrap=0)
    found = alignment_between(
        ("a", _sampled(left)), ("b", _sampled(right)), sample, 3, 0.95, settings
    )
    table = found.table[found.table["occurrences"] == "all"].set_index(["layer_a", "layer_b"])
    as_read = [[x.astype(np.float32).astype(np.float64) for x in side] for side in (left, right)]

    def cka(x, y) -> float:
        products = CrossProducts([x.shape[1]], [y.shape[1]])
        products.add([x.numpy()], [y.numpy()])
        return float(products.cka()[0, 0])

    def replay():
        permutations = generator(3, "alignment_null")
        return lambda size, device: torch.from_numpy(permutations.permutation(size))

    for a, x in enumerate(as_read[0]):
        for b, y in enumerate(as_read[1]):
            score, p, tau = package.calibrate(
                torch.from_numpy(x), torch.from_numpy(y), cka, K=19, perm_fn=replay()
            )
            row = table.loc[(a, b)]
            assert row["threshold_cka"] == pytest.approx(float(tau), rel=1e-5)
            assert row["p_cka"] == pytest.approx(float(p))
            assert row["calibrated_cka"] == pytest.approx(float(score), abs=1e-5)
        score, p, tau = package.calibrate_layers(
            [torch.from_numpy(x)],
            [torch.from_numpy(y) for y in as_read[1]],
            cka,
            K=19,
            perm_fn=replay(),
        )
        best = found.best_layers.set_index(["model", "layer", "occurrences", "measure"])
        chosen = best.loc[("a", a, "all", "cka")]
        assert chosen["best_threshold"] == pytest.approx(float(tau), rel=1e-5)
        assert chosen["best_p"] == pytest.approx(float(p))
        assert chosen["best_calibrated"] == pytest.approx(float(score), abs=1e-5)


def test_a_bootstrap_interval_holds_the_value_and_narrows_with_more_sentences():
    """Each value lies in its interval; with four times the sentences the interval of
    debiased CKA is about half as wide (1/√n), and a layer's best match stays best."""
    widths = []
    for n in (300, 1200):
        rng = np.random.default_rng(5)
        signal = rng.normal(size=(n, 4))
        left, right = (_related_layers(rng, n, 2, 6, signal) for _ in range(2))
        sample = SampleRows(np.ones(n, bool), np.arange(n) // 2, sampled=False)
        settings = AlignmentSettings(permutations=2, bootstrap=60)
        found = alignment_between(
            ("a", _sampled(left)), ("b", _sampled(right)), sample, 0, 0.9, settings
        )
        table = found.table
        for name in (record.name for record in ALIGNMENT_MEASURES):
            assert (table[f"{name}_low"] <= table[f"{name}_high"]).all(), name
        inside = (table["cka_debiased_low"] <= table["cka_debiased"]) & (
            table["cka_debiased"] <= table["cka_debiased_high"]
        )
        assert inside.all()
        assert (table["bootstrap"] == 60).all() and (table["permutations"] == 2).all()
        widths.append((table["cka_debiased_high"] - table["cka_debiased_low"]).mean())
        stays = found.best_layers.loc[found.best_layers["measure"] == "cka", "stays_best"]
        assert stays.between(0, 1).all()
    assert 1.4 < widths[0] / widths[1] < 3.0
    assert alignment_measure("procrustes").perfect == 0.0
