"""Massive activations: Sun et al.'s rule on planted outliers, and a layer's census."""

from __future__ import annotations

import numpy as np
import pytest
from indexed import random_index

from contextuality.measures import outliers, registry, summary
from contextuality.measures.analysis import measure_layer
from contextuality.measures.settings import MeasureSettings


def test_both_thresholds_must_be_passed():
    """Where 1,000 × the median is above 100 it decides; where it is below, 100 does."""
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(2000, 16)).astype(np.float16)
    median = float(np.median(np.abs(vectors)))
    vectors[[5, 9], 3] = 5000.0
    vectors[11, 3] = 1.2 * 1000 * median  # above the relative threshold
    vectors[12, 4] = 0.8 * 1000 * median  # above 100, below 1,000 × the median
    vectors[13, 7] = -2000.0
    found = outliers.massive_activations(vectors)
    assert found.threshold == pytest.approx(1000 * found.median)
    assert sorted(zip(found.rows.tolist(), found.dimensions.tolist(), strict=True)) == [
        (5, 3),
        (9, 3),
        (11, 3),
        (13, 7),
    ]
    assert found.values[found.rows == 13][0] == -2000.0
    small = (rng.normal(size=(2000, 16)) * 0.01).astype(np.float16)
    small[3, 2], small[4, 2] = 150.0, 50.0  # 1,000 × the median is about 7: 100 decides
    quiet = outliers.massive_activations(small)
    assert quiet.threshold == outliers.MASSIVE_MAGNITUDE
    assert quiet.rows.tolist() == [3] and quiet.dimensions.tolist() == [2]


@pytest.mark.parametrize("shape", [(1, 1), (2, 1), (5, 3), (6, 4), (3000, 17)])
def test_the_median_magnitude_counted_by_bits_is_numpy_s_in_float64(shape):
    rng = np.random.default_rng(shape[0])
    vectors = (rng.normal(size=shape) * rng.choice([0.01, 1, 300], size=shape)).astype(np.float16)
    vectors[0, 0] = -vectors[0, 0]
    expected = np.median(np.abs(vectors.astype(np.float64)))
    assert outliers.median_magnitude(vectors) == expected
    assert outliers.median_magnitude(vectors.astype(np.float32)) == expected
    # A wider row that is no float16 value (a correction's) is not counted by its rounding.
    widened = vectors.astype(np.float64)
    widened[-1, -1] += 1e-6
    assert outliers.median_magnitude(widened) == np.median(np.abs(widened))


def test_float16_values_held_wider_find_what_float16_rows_find():
    """A layer widened from its float16 shard is counted by bit pattern, as the shard is:
    the same median, threshold and activations, overflow to float16 falling back."""
    vectors = np.random.default_rng(5).normal(size=(400, 6)).astype(np.float16)
    vectors[7, 2] = 2000.0
    as_stored = outliers.massive_activations(vectors)
    held = outliers.massive_activations(vectors.astype(np.float32))
    assert (held.median, held.threshold) == (as_stored.median, as_stored.threshold)
    assert held.rows.tolist() == as_stored.rows.tolist() == [7]
    beyond = vectors.astype(np.float32)
    beyond[7, 2] = 1e6  # not a float16 value: counted exactly, not as infinity
    found = outliers.massive_activations(beyond)
    assert found.values.tolist() == [1e6] and found.median == held.median


def test_none_in_a_layer_without_outliers():
    found = outliers.massive_activations(np.random.default_rng(2).normal(size=(300, 8)))
    assert len(found.rows) == len(found.dimensions) == len(found.values) == 0


def test_a_layer_s_census_names_dimensions_words_and_positions():
    rng = np.random.default_rng(3)
    index = random_index(rng, 150, (2, 8))
    occurrences = index.occurrences
    vectors = rng.normal(size=(len(occurrences), 12))
    first = occurrences["position"].to_numpy() == 0
    vectors[first, 5] = 3000.0  # a sink dimension on every first word
    dog = np.flatnonzero(occurrences["word"].to_numpy() == "dog")[:4]
    vectors[dog, 9] = -4000.0
    settings = MeasureSettings(bootstrap_resamples=20, sample_replicates=2, isotropy_samples=2)
    layer = measure_layer(vectors, occurrences, index.vocab, settings).summary
    row = layer["measures"]["massive_activations"]
    carriers = first.copy()
    carriers[dog] = True
    assert row["raw"] == pytest.approx(carriers.mean())
    assert row["dimensions"] == "5,9"
    layer |= {"model": "m", "transform": "none", "layer": 2, "n_layers": 4, "layer_output": "x"}
    census = summary.census_table([layer], registry.measure("massive_activations").census)
    census = census.set_index("dimension")
    assert census.loc[5, "n_activations"] == first.sum()
    assert census.loc[5, "share_first_word"] == 1.0
    assert census.loc[9, "n_occurrences"] == 4 and census.loc[9, "top_words"] == "dog"
    assert census.loc[9, "share_first_word"] == pytest.approx(first[dog].mean())
    assert census.loc[9, "max_abs"] == 4000.0 and census.loc[9, "mean"] == -4000.0
    assert set(census["median_abs"]) == {row["median_abs"]}
