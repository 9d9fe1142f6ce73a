"""A layer's spectrum and its sentences' shape: matrix entropy, α-ReQ and curvature on
constructed inputs with known values, against brute force, and their invariances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from contextuality.errors import ConfigError
from contextuality.measures import spectra
from contextuality.measures.settings import MeasureSettings


def _circle(angles_degrees: list[float]) -> np.ndarray:
    radians = np.radians(angles_degrees)
    return np.column_stack([np.cos(radians), np.sin(radians), np.zeros(len(radians))])


@pytest.mark.parametrize("k", [1, 2, 5])
def test_entropy_of_k_equal_eigenvalues_is_log_k(k):
    """k orthonormal rows (the n × n Gram path), and the same rows repeated until they
    outnumber the dimensions (the d × d path): log k nats both ways."""
    rows = np.eye(8)[:k]
    assert spectra.matrix_entropy(rows) == pytest.approx(np.log(k), abs=1e-12)
    repeated = np.repeat(rows, 9, axis=0)
    assert len(repeated) > repeated.shape[1]
    assert spectra.matrix_entropy(repeated) == pytest.approx(np.log(k), abs=1e-12)


def test_dataset_entropy_matches_the_gram_definition_and_its_invariances():
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(40, 6)) * np.array([5.0, 3.0, 1.0, 0.5, 0.2, 0.1]) + 3.0
    centered = vectors - vectors.mean(axis=0)
    unit = centered / np.linalg.norm(centered, axis=1, keepdims=True)
    gram = unit @ unit.T
    eigenvalues = np.linalg.eigvalsh(gram / np.trace(gram))
    eigenvalues = eigenvalues[eigenvalues > 1e-15]
    expected = -np.sum(eigenvalues * np.log(eigenvalues))
    found = spectra.dataset_entropy(vectors)
    assert found == pytest.approx(expected, abs=1e-10)
    moved = 4.0 * vectors @ ortho_group.rvs(6, random_state=2) - 11.0
    assert spectra.dataset_entropy(moved) == pytest.approx(found, abs=1e-10)
    assert 0.0 < found < np.log(6)


def test_a_sentence_of_two_rows_has_entropy_zero_one_row_none():
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(6, 3))
    triangle = _circle([0, 120, 240])
    rows = np.vstack([vectors[:1], vectors[1:3], triangle])
    shapes = spectra.sentence_shapes(rows, np.array([0, 1, 3]), "leave_out")
    found = shapes.entropies
    np.testing.assert_allclose(shapes.means[1], rows[1:3].mean(axis=0), atol=1e-6)
    assert np.isnan(found[0])
    assert found[1] == pytest.approx(0.0, abs=1e-12)  # centered: ±u, one direction
    assert found[2] == pytest.approx(np.log(2), abs=1e-12)  # three at 120°: a plane, evenly


def test_curvature_of_known_trajectories():
    """Four points a quarter turn apart: consecutive steps at right angles (π/2); three
    a third of a turn apart: steps at 120°, of |cosine| 1/2 (π/3)."""
    assert spectra.curvature(_circle([0, 90, 180, 270]), "leave_out") == pytest.approx(np.pi / 2)
    assert spectra.curvature(_circle([0, 120, 240]), "leave_out") == pytest.approx(np.pi / 3)
    assert np.isnan(spectra.curvature(_circle([0, 90]), "leave_out"))


def test_a_zero_step_leaves_the_sentence_out_or_counts_as_a_right_angle_of_zero():
    """Two words sharing one vector make a zero step: left out (NaN) with ``leave_out``; with
    ``zero`` (Skean et al.'s code) that angle is 0 and the others are kept."""
    rows = _circle([0, 90, 90, 180, 270])  # the second step is zero
    assert np.isnan(spectra.curvature(rows, "leave_out"))
    assert spectra.curvature(rows, "zero") == pytest.approx((0 + 0 + np.pi / 2) / 3)
    shapes = spectra.sentence_shapes(rows, np.array([0]), "zero")
    assert shapes.curvatures[0] == pytest.approx(spectra.curvature(rows, "zero"), abs=1e-6)
    with pytest.raises(ConfigError, match="curvature_zero_steps must be one of"):
        MeasureSettings(curvature_zero_steps="skip")
    with pytest.raises(ConfigError, match="alpha_req_ranks must be two ranks"):
        MeasureSettings(alpha_req_ranks=(100, 6))


def test_curvature_agrees_with_a_loop_and_is_invariant():
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(9, 5))
    unit = spectra.normalized_rows(rows)
    angles = []
    for k in range(1, len(rows) - 1):
        before, after = unit[k] - unit[k - 1], unit[k + 1] - unit[k]
        cosine = abs(before @ after) / (np.linalg.norm(before) * np.linalg.norm(after))
        angles.append(np.arccos(min(cosine, 1.0)))
    found = spectra.curvature(rows, "leave_out")
    assert found == pytest.approx(np.mean(angles), abs=1e-12)
    moved = 0.3 * rows @ ortho_group.rvs(5, random_state=5) + 2.0
    assert spectra.curvature(moved, "leave_out") == pytest.approx(found, abs=1e-10)
    assert 0.0 <= found <= np.pi / 2
    per_sentence = spectra.sentence_shapes(
        np.vstack([rows, rows[:2]]), np.array([0, 9]), "leave_out"
    ).curvatures
    assert per_sentence[0] == pytest.approx(found) and np.isnan(per_sentence[1])


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.7])
def test_alpha_req_recovers_a_power_law(alpha):
    eigenvalues = 3.0 * np.arange(1, 201, dtype=float) ** -alpha
    assert spectra.alpha_req(eigenvalues) == pytest.approx(alpha, abs=1e-10)


def test_alpha_req_weights_the_head_of_its_range():
    """Weighted 1/rank as reptrix fits it: against an unweighted fit of the same ranks,
    a spectrum that bends within the range gives a different slope."""
    rank = np.arange(1, 201, dtype=float)
    eigenvalues = rank**-1.0 * np.exp(-rank / 40.0)
    chosen = (rank >= 6) & (rank <= 100)
    unweighted = -np.polyfit(np.log(rank[chosen]), np.log(eigenvalues[chosen]), 1)[0]
    found = spectra.alpha_req(eigenvalues)
    design = np.column_stack([-np.log(rank[chosen]), np.ones(chosen.sum())])
    weights = 1.0 / rank[chosen]
    target = np.log(eigenvalues[chosen] / eigenvalues.sum())
    expected = np.linalg.lstsq(design * np.sqrt(weights)[:, None], target * np.sqrt(weights))[0]
    assert found == pytest.approx(expected[0], abs=1e-10)
    assert abs(found - unweighted) > 0.05


def test_alpha_req_needs_ten_ranks():
    assert np.isnan(spectra.alpha_req(np.arange(14, 0, -1.0)))  # ranks 6 to 14: nine
    assert np.isfinite(spectra.alpha_req(np.arange(15, 0, -1.0)))


def test_alpha_req_leaves_out_a_null_direction_that_rounding_fills():
    """Rows on a hyperplane (a layer normalization's output) stored as float16 have a null
    direction whose variance is rounding alone, and differs as one value rounds otherwise:
    above `rounding_floor` of the rows' mean square are the real directions only, and
    α-ReQ over them is that of the spectrum without the null one, whichever the rounding."""
    rng = np.random.default_rng(8)
    rows = rng.normal(size=(4000, 40)) * np.linspace(2.0, 0.3, 40)
    rows -= rows.mean(axis=1, keepdims=True)  # every row on the hyperplane Σ x_j = 0
    found = []
    for nudge in (0.0, 1e-3):
        stored = (rows + nudge * (rng.random(rows.shape) < 0.05)).astype(np.float16)
        vectors = stored.astype(np.float64)
        centered = vectors - vectors.mean(axis=0)
        eigenvalues = np.linalg.eigvalsh(centered.T @ centered / len(vectors))[::-1]
        floor = spectra.rounding_floor(float(np.mean(vectors**2)))
        assert (eigenvalues > floor).sum() == 39 and 0 < eigenvalues[-1] < floor
        found.append(spectra.alpha_req(eigenvalues, floor=floor))
        assert found[-1] == pytest.approx(spectra.alpha_req(eigenvalues[:-1]), abs=1e-12)
        assert spectra.alpha_req(eigenvalues) > found[-1] + 0.05  # the null's log drags it
    assert found[0] == pytest.approx(found[1], abs=0.01)


def test_a_layer_s_spectrum_rows_from_its_occurrences():
    """The measure step's rows: dataset entropy of the sentences' mean vectors, prompt
    entropy and curvature averaged over the sentences that have them (their words in
    position order), with a bootstrap interval around the mean; α-ReQ NaN for a layer of
    fewer than 15 dimensions, of the covariance eigenvalues for a wider one."""
    from indexed import random_index

    from contextuality.measures.analysis import measure_layer
    from contextuality.measures.settings import MeasureSettings

    rng = np.random.default_rng(6)
    index = random_index(rng, 120, (1, 9))
    occurrences = index.occurrences
    settings = MeasureSettings(bootstrap_resamples=200, sample_replicates=2, isotropy_samples=2)
    for width in (8, 40):
        vectors = rng.normal(size=(len(occurrences), width)) * np.linspace(3, 0.1, width) + 1.0
        found = measure_layer(vectors.copy(), occurrences, index.vocab, settings).summary
        rows = found["measures"]
        by_sentence = [
            group.sort_values("position").index.to_numpy()
            for _, group in occurrences.groupby("sentence_id")
        ]
        means = np.array([vectors[members].mean(axis=0) for members in by_sentence])
        assert rows["dataset_entropy"]["raw"] == pytest.approx(  # rows read as float32
            spectra.dataset_entropy(means), abs=1e-6
        )
        entropies = [spectra.dataset_entropy(vectors[m]) for m in by_sentence if len(m) > 1]
        curvatures = [spectra.curvature(vectors[m], "leave_out") for m in by_sentence if len(m) > 2]
        for row, values in (("prompt_entropy", entropies), ("curvature", curvatures)):
            # batched in float32 against one sentence at a time in float64
            assert rows[row]["raw"] == pytest.approx(np.mean(values), abs=1e-6)
            assert rows[row]["n"] == len(values)
            assert rows[row]["raw_low"] < rows[row]["raw"] < rows[row]["raw_high"]
        centered = vectors - vectors.mean(axis=0)
        eigenvalues = np.linalg.eigvalsh(centered.T @ centered / len(vectors))[::-1]
        expected = spectra.alpha_req(eigenvalues)
        assert (np.isnan(expected) and np.isnan(rows["alpha_req"]["raw"])) == (width < 15)
        if width >= 15:
            assert rows["alpha_req"]["raw"] == pytest.approx(expected, abs=1e-6)


def test_batched_sentences_agree_with_one_at_a_time():
    """Sentences of one length go through float32 batches: two-row sentences still have
    entropy exactly 0, three-row ones agree with the float64 path within 1e-6."""
    rng = np.random.default_rng(7)
    pairs = rng.normal(size=(40, 16)).astype(np.float16)
    assert np.all(spectra.sentence_shapes(pairs, np.arange(0, 40, 2), "leave_out").entropies == 0)
    triples = rng.normal(size=(30, 16)).astype(np.float16)
    shapes = spectra.sentence_shapes(triples, np.arange(0, 30, 3), "leave_out")
    one_at_a_time = [spectra.dataset_entropy(triples[i : i + 3]) for i in range(0, 30, 3)]
    np.testing.assert_allclose(shapes.entropies, one_at_a_time, atol=1e-6)
    curvatures = [spectra.curvature(triples[i : i + 3], "leave_out") for i in range(0, 30, 3)]
    np.testing.assert_allclose(shapes.curvatures, curvatures, atol=1e-5)
    np.testing.assert_allclose(
        shapes.means, triples.astype(np.float64).reshape(10, 3, 16).mean(axis=1), atol=1e-12
    )
