"""Tests for contextuality.measures.equations (Ethayarajh 2019 measures and baselines).

The library computes SelfSim and the anisotropy baseline through sum identities and MEV
through Gram/scatter eigenvalues; here every measure is checked against a slow, literal
reference implementation written from the paper's definitions, against constructed cases
whose answers are known analytically, and for the invariances the definitions imply.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from contextuality.measures.components import (
    explained_variance_first_component,
    first_component_statistics,
)
from contextuality.measures.equations import (
    anisotropy_baseline,
    explained_variance_baseline,
    intra_similarity,
    self_similarity,
)
from contextuality.rows import group_sizes, unit_rows

# --------------------------------------------------------------------------------------
# Helpers and brute-force references
# --------------------------------------------------------------------------------------


def run_starts(keys: np.ndarray) -> np.ndarray:
    """First row of each run of equal consecutive keys (keys: 1-D, or 2-D compared by row)."""
    keys = np.asarray(keys)
    if keys.ndim == 1:
        keys = keys[:, None]
    change = np.any(keys[1:] != keys[:-1], axis=1)
    return np.flatnonzero(np.concatenate([[True], change]))


def sorted_occurrences(words: np.ndarray, sentences: np.ndarray, vectors: np.ndarray):
    """Sort occurrences by (word, sentence) and return the layout self_similarity expects."""
    order = np.lexsort((sentences, words))
    words, sentences, vectors = words[order], sentences[order], vectors[order]
    word_starts = run_starts(words)
    context_starts = run_starts(np.stack([words, sentences], axis=1))
    return words, sentences, vectors, word_starts, context_starts


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def ref_self_similarity(vectors, words, sentences) -> dict[int, float]:
    """Literal SelfSim: mean cosine over ordered pairs (j, k) of a word's occurrences in
    different sentences; NaN when no such pair exists."""
    out = {}
    for w in np.unique(words):
        idx = np.flatnonzero(words == w)
        total, count = 0.0, 0
        for j in idx:
            for k in idx:
                if sentences[j] != sentences[k]:
                    total += cosine(vectors[j], vectors[k])
                    count += 1
        out[int(w)] = total / count if count else float("nan")
    return out


def ref_intra_similarity(vectors, sentences) -> dict[int, float]:
    """Literal IntraSim: per sentence, mean of cos(f_i, mean of the sentence's f)."""
    out = {}
    for s in np.unique(sentences):
        rows = vectors[sentences == s].astype(np.float64)
        mean = rows.mean(axis=0)
        out[int(s)] = float(np.mean([cosine(r, mean) for r in rows]))
    return out


def ref_mev(matrix: np.ndarray, centered: bool = False) -> float:
    """Literal MEV: s[0]^2 / sum(s^2) from a full SVD."""
    matrix = np.asarray(matrix, dtype=np.float64)
    if centered:
        matrix = matrix - matrix.mean(axis=0)
    s = np.linalg.svd(matrix, compute_uv=False)
    return float(s[0] ** 2 / np.sum(s**2))


def ref_anisotropy(vectors, sentences) -> float:
    """Literal anisotropy baseline: mean cosine over all ordered pairs in different sentences,
    via the full pairwise cosine matrix."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = unit @ unit.T
    different = sentences[:, None] != sentences[None, :]
    return float(cos[different].mean())


def random_orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def random_occurrences(seed: int, n_words: int, n_rows: int, n_sentences: int, d: int):
    """Random word/sentence ids (so words often repeat inside one sentence) and vectors with
    a shared offset, so cosines are far from 0 and errors would be visible."""
    rng = np.random.default_rng(seed)
    words = rng.integers(0, n_words, n_rows)
    sentences = rng.integers(0, n_sentences, n_rows)
    vectors = rng.standard_normal((n_rows, d)) + rng.standard_normal(d)
    return words, sentences, vectors


# --------------------------------------------------------------------------------------
# 1. Agreement with brute-force references on seeded random data
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "n_words", "n_rows", "n_sentences", "d"),
    [
        (0, 3, 20, 4, 5),  # few sentences: many same-sentence repeats
        (1, 5, 60, 10, 16),
        (2, 1, 12, 12, 8),  # one word; sentences mostly distinct
        (3, 8, 120, 6, 3),  # d small, heavy repetition within sentences
    ],
)
def test_self_similarity_matches_pairwise_reference(seed, n_words, n_rows, n_sentences, d):
    """The O(n·d) sum identity equals the explicit average over different-sentence pairs,
    including words that repeat inside one sentence (those pairs must be excluded)."""
    words, sentences, vectors = random_occurrences(seed, n_words, n_rows, n_sentences, d)
    words, sentences, vectors, word_starts, context_starts = sorted_occurrences(
        words, sentences, vectors
    )
    # The data must really contain a word repeated within a sentence for this test to bite.
    assert len(context_starts) < n_rows or n_sentences >= n_rows

    got = self_similarity(unit_rows(vectors), word_starts, context_starts)
    ref = ref_self_similarity(vectors, words, sentences)
    expected = np.array([ref[int(w)] for w in words[word_starts]])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_self_similarity_repeats_within_sentence_are_excluded():
    """Hand-built groups: word 0 has three copies in sentence 0 and one opposite vector in
    sentence 1, so only cross pairs (cos = -1) count; word 1 appears only in one sentence
    (NaN); word 2 mixes both."""
    e = np.eye(3)
    vectors = np.array(
        [
            e[0], e[0], e[0], -e[0],  # word 0: sentences 0,0,0,1
            e[1], e[2],  # word 1: both in sentence 5
            e[0], e[1], e[0],  # word 2: sentences 0,0,1
        ]
    )  # fmt: skip
    words = np.array([0, 0, 0, 0, 1, 1, 2, 2, 2])
    sentences = np.array([0, 0, 0, 1, 5, 5, 0, 0, 1])
    word_starts = np.array([0, 4, 6])
    context_starts = np.array([0, 3, 4, 6, 8])
    got = self_similarity(unit_rows(vectors), word_starts, context_starts)
    # Word 2: cross pairs (e0,e0),(e1,e0) in both orders → (1+0+1+0)/4 = 0.5.
    np.testing.assert_allclose(got, [-1.0, np.nan, 0.5], atol=1e-7)
    ref = ref_self_similarity(vectors, words, sentences)
    np.testing.assert_allclose(got, [ref[0], ref[1], ref[2]], atol=1e-7)


def test_self_similarity_all_distinct_sentences_is_paper_formula():
    """With every occurrence in its own sentence, SelfSim is the paper's
    1/(n²−n) Σ_{j≠k} cos(f_j, f_k)."""
    rng = np.random.default_rng(7)
    n, d = 9, 6
    vectors = rng.standard_normal((n, d)) + 0.5
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = unit @ unit.T
    paper = (cos.sum() - np.trace(cos)) / (n**2 - n)
    got = self_similarity(unit_rows(vectors), np.array([0]), np.arange(n))
    np.testing.assert_allclose(got, [paper], rtol=1e-6)


def test_self_similarity_single_context_word_is_nan():
    """A word all of whose occurrences share one sentence has no pairs: NaN, while its
    neighbours are still finite."""
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((7, 4))
    # word 0: rows 0-2 in sentences 0,1,2 ; word 1: rows 3-5 all in sentence 4 ;
    # word 2: row 6 alone (one occurrence, one context).
    word_starts = np.array([0, 3, 6])
    context_starts = np.array([0, 1, 2, 3, 6])
    got = self_similarity(unit_rows(vectors), word_starts, context_starts)
    assert np.isfinite(got[0])
    assert np.isnan(got[1])
    assert np.isnan(got[2])


@pytest.mark.parametrize(
    ("seed", "sizes", "d"),
    [(0, [1, 2, 3], 4), (1, [5, 7, 1, 10], 12), (2, [30], 3), (3, [2] * 20, 50)],
)
def test_intra_similarity_matches_loop_reference(seed, sizes, d):
    """IntraSim uses raw vectors for the sentence mean (not unit vectors); compare to a loop.
    Rows get very different norms so that averaging unit vectors instead would be caught."""
    rng = np.random.default_rng(seed)
    n_rows = sum(sizes)
    scales = rng.uniform(0.1, 10.0, (n_rows, 1))
    vectors = (rng.standard_normal((n_rows, d)) + 0.7) * scales
    sentences = np.repeat(np.arange(len(sizes)), sizes)
    starts = run_starts(sentences)
    got = intra_similarity(vectors, starts)
    ref = ref_intra_similarity(vectors, sentences)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, [ref[s] for s in range(len(sizes))], rtol=1e-6)


def test_measures_agree_across_chunk_boundaries_and_orders(monkeypatch):
    """Every pass over a layer reads it in chunks of rows; with chunks of 3 rows cutting
    through sentences and words, each measure equals the loop reference, and reading the
    rows through a permutation (`order`) equals reading the permuted copy."""
    import contextuality.measures.components as components
    import contextuality.measures.equations as measures
    import contextuality.rows as rows

    d = 5
    monkeypatch.setattr(rows, "_CHUNK_BYTES", 3 * 8 * d)
    assert [chunk.stop - chunk.start for chunk in rows.row_chunks(7, d)] == [3, 3, 1]
    rng = np.random.default_rng(41)
    sizes = [4, 1, 7, 2, 5]
    scales = rng.uniform(0.1, 10.0, (sum(sizes), 1))
    vectors = (rng.standard_normal((sum(sizes), d)) + 0.5) * scales
    sentences = np.repeat(np.arange(len(sizes)), sizes)
    words = rng.integers(0, 4, len(vectors))
    got = measures.intra_similarity(vectors, run_starts(sentences))
    ref = ref_intra_similarity(vectors, sentences)
    np.testing.assert_allclose(got, [ref[s] for s in range(len(sizes))], rtol=1e-6)

    order = np.lexsort((sentences, words))
    word_starts = run_starts(words[order])
    context_starts = rows.run_starts(words[order], sentences[order])
    through_order = self_similarity(vectors, word_starts, context_starts, order)
    np.testing.assert_array_equal(
        through_order, self_similarity(vectors[order], word_starts, context_starts)
    )
    ref_selfsim = ref_self_similarity(vectors, words, sentences)
    np.testing.assert_allclose(through_order, [ref_selfsim[w] for w in np.unique(words)], rtol=1e-6)
    weights = rng.integers(1, 4, len(vectors))
    np.testing.assert_array_equal(
        measures.paper_self_similarity(vectors, word_starts, weights, order),
        measures.paper_self_similarity(vectors[order], word_starts, weights[order]),
    )
    statistics = components.first_component_statistics(vectors, word_starts, weights, order)
    copied = components.first_component_statistics(vectors[order], word_starts, weights[order])
    for field in ("mev", "mev_centered", "truncated_svd"):
        np.testing.assert_allclose(getattr(statistics, field), getattr(copied, field), rtol=1e-12)
    brute = [
        cosine(vectors[i], vectors[j])
        for i in range(len(vectors))
        for j in range(len(vectors))
        if sentences[i] != sentences[j]
    ]
    assert anisotropy_baseline(vectors, run_starts(sentences)) == pytest.approx(np.mean(brute))
    # One read of the rows gives IntraSim and the unit rows' sums by sentence together.
    intrasim, sums = measures.sentence_statistics(vectors, run_starts(sentences))
    np.testing.assert_array_equal(intrasim, got)
    assert sums.expected_cosine() == pytest.approx(np.mean(brute))
    separate = measures.sentence_sums(vectors, run_starts(sentences), unit=True)
    np.testing.assert_allclose(sums.total, separate.total, rtol=1e-12)
    np.testing.assert_allclose(sums.within, separate.within, rtol=1e-12)
    assert (sums.n, sums.same_sentence_pairs) == (len(vectors), sum(n * n for n in sizes))


@pytest.mark.parametrize("chunk_rows", [1, 2, 3, 50])
def test_complete_group_sums_yield_each_group_once_in_order(monkeypatch, chunk_rows):
    """Groups longer than a chunk, shorter than one and ending on its edge: every group's
    sum comes once, in order, equal to summing its rows; unit scaling applies per row of
    the array, through `order`, and `with_unit` gives the raw and the unit sums side by side."""
    import contextuality.rows as row_helpers

    monkeypatch.setattr(row_helpers, "_CHUNK_BYTES", chunk_rows * 8 * 4)
    rng = np.random.default_rng(43)
    sizes = [5, 1, 2, 7, 1, 3]
    rows = rng.standard_normal((sum(sizes), 4)).astype(np.float32)
    order = rng.permutation(len(rows))
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    pieces = list(row_helpers.complete_group_sums(rows, starts, order=order, unit=True))
    covered = np.concatenate([np.arange(g.start, g.stop) for g, _ in pieces])
    np.testing.assert_array_equal(covered, np.arange(len(sizes)))
    got = np.concatenate([sums for _, sums in pieces])
    raw = rows.astype(np.float64)
    scaled = raw / np.linalg.norm(raw, axis=1)[:, None]
    expected = np.add.reduceat(scaled[order], starts)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    both = row_helpers.group_sums(rows, starts, order=order, with_unit=True)
    np.testing.assert_allclose(both[:, :4], np.add.reduceat(raw[order], starts), rtol=1e-12)
    np.testing.assert_allclose(both[:, 4:], expected, rtol=1e-12)


def test_keep_rows_moves_rows_up_in_place(monkeypatch):
    """keep_rows equals boolean indexing, writes into the array it was given (no second
    copy of the layer) and, with every row kept, returns that array itself."""
    import contextuality.rows as rows

    monkeypatch.setattr(rows, "_CHUNK_BYTES", 2 * 8 * 3)
    rng = np.random.default_rng(42)
    vectors = rng.standard_normal((11, 3)).astype(np.float16)
    keep = rng.random(11) < 0.6
    keep[0] = False
    expected = vectors[keep].copy()
    kept = rows.keep_rows(vectors, keep)
    np.testing.assert_array_equal(kept, expected)
    assert np.shares_memory(kept, vectors)
    assert rows.keep_rows(vectors, np.ones(11, dtype=bool)) is vectors


def test_intra_similarity_raw_mean_differs_from_unit_mean():
    """Guard for the previous test: on this data the mean of raw vectors and the mean of
    unit vectors give clearly different IntraSim, so the reference discriminates."""
    vectors = np.array([[1.0, 0.0], [0.0, 100.0]])
    got = intra_similarity(vectors, np.array([0]))[0]
    # Raw mean ∝ (1, 100): cosines 1/√10001 and 100/√10001.
    expected = (1 + 100) / np.sqrt(10001) / 2
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # With a unit-vector mean ∝ (1, 1) it would be 1/√2 instead.
    assert abs(got - 1 / np.sqrt(2)) > 0.01


@pytest.mark.parametrize(
    ("shape", "centered"),
    [
        *[(shape, c) for shape in [(5, 20), (20, 5), (8, 8), (40, 3)] for c in (False, True)],
        ((1, 4), False),  # one row: MEV 1 uncentered (a centered single row is zero → NaN)
    ],
)
def test_mev_matches_svd(shape, centered):
    """MEV via the smaller Gram/scatter matrix equals s[0]²/Σs² from the SVD, for n<d, n>d
    and square matrices, centered or not."""
    rng = np.random.default_rng(100 * shape[0] + shape[1])
    matrix = rng.standard_normal(shape) + rng.standard_normal(shape[1])
    got = explained_variance_first_component(matrix, centered=centered)
    assert isinstance(got, float)
    np.testing.assert_allclose(got, ref_mev(matrix, centered), rtol=1e-10)


def test_mev_centering_matters():
    """With a large common offset, uncentered MEV is near 1 but centered MEV is not: the
    `centered` option must really subtract the column mean."""
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((50, 10)) + 20.0
    assert explained_variance_first_component(matrix) > 0.99
    assert explained_variance_first_component(matrix, centered=True) < 0.5


def test_mev_zero_matrix_is_nan():
    """No variance at all: MEV is undefined (NaN), including one centered row."""
    assert np.isnan(explained_variance_first_component(np.zeros((3, 4))))
    assert np.isnan(explained_variance_first_component(np.ones((1, 4)), centered=True))


@pytest.mark.parametrize("centered", [False, True])
def test_explained_variance_per_group_matches_svd(centered):
    """Per-group MEV equals the SVD reference on each contiguous group (sizes 2..15, n<d
    and n>d groups mixed)."""
    rng = np.random.default_rng(21)
    sizes = [2, 15, 4, 9, 3]
    d = 6
    vectors = rng.standard_normal((sum(sizes), d)) + 1.0
    starts = np.cumsum([0, *sizes[:-1]])
    statistics = first_component_statistics(vectors, starts)
    got = statistics.mev_centered if centered else statistics.mev
    bounds = np.append(starts, len(vectors))
    expected = [ref_mev(vectors[b:e], centered) for b, e in pairwise(bounds)]
    assert got.shape == (len(sizes),)
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize(
    ("seed", "sizes", "d"),
    [(0, [1, 1, 1], 3), (1, [3, 1, 4, 1, 5], 7), (2, [10, 10], 2), (3, [1] * 12, 20)],
)
def test_anisotropy_baseline_matches_pairwise_reference(seed, sizes, d):
    """Exact expected cosine over different-sentence pairs equals the all-pairs average."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((sum(sizes), d)) + rng.standard_normal(d)
    sentences = np.repeat(np.arange(len(sizes)), sizes)
    got = anisotropy_baseline(unit_rows(vectors), run_starts(sentences))
    assert isinstance(got, float)
    np.testing.assert_allclose(got, ref_anisotropy(vectors, sentences), rtol=1e-5, atol=1e-7)


def test_anisotropy_baseline_single_sentence_is_nan():
    """All occurrences in one sentence: no cross-sentence pair, so NaN."""
    vectors = np.random.default_rng(0).standard_normal((4, 3))
    assert np.isnan(anisotropy_baseline(unit_rows(vectors), np.array([0])))


def test_group_sizes():
    """Group lengths from start rows, last group running to the end."""
    np.testing.assert_array_equal(group_sizes(np.array([0, 2, 3]), 7), [2, 1, 4])


# --------------------------------------------------------------------------------------
# 2. Constructed cases with known answers
# --------------------------------------------------------------------------------------


def test_identical_vectors_up_to_positive_scale():
    """Occurrences that are positive multiples of one vector: SelfSim 1, anisotropy 1,
    MEV 1 (rank one), IntraSim 1 (every vector is parallel to the mean)."""
    rng = np.random.default_rng(3)
    v = rng.standard_normal(8)
    vectors = rng.uniform(0.5, 5.0, (6, 1)) * v
    unit = unit_rows(vectors)
    np.testing.assert_allclose(
        self_similarity(unit, np.array([0]), np.array([0, 2, 3])), [1.0], rtol=1e-6
    )
    np.testing.assert_allclose(anisotropy_baseline(unit, np.array([0, 2, 3])), 1.0, rtol=1e-6)
    np.testing.assert_allclose(explained_variance_first_component(vectors), 1.0, rtol=1e-10)
    np.testing.assert_allclose(intra_similarity(vectors, np.array([0, 4])), [1, 1], rtol=1e-6)


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_orthonormal_rows(n):
    """Rows e_1..e_n of an identity matrix (d = n + 2 so rows do not span the space).

    - SelfSim and anisotropy: every cross pair has cosine 0, so 0.
    - IntraSim: the sentence mean is m = (1/n) Σ e_i with ‖m‖ = √n / n = 1/√n, and
      e_i·m = 1/n, so cos(e_i, m) = (1/n) / (1/√n) = 1/√n for every i; the mean is 1/√n.
    - MEV: the singular values are n ones, so MEV = 1 / n.
    """
    vectors = np.eye(n, n + 2)
    unit = unit_rows(vectors)
    each_own_sentence = np.arange(n)
    np.testing.assert_allclose(
        self_similarity(unit, np.array([0]), each_own_sentence), [0.0], atol=1e-7
    )
    np.testing.assert_allclose(anisotropy_baseline(unit, each_own_sentence), 0.0, atol=1e-7)
    np.testing.assert_allclose(
        intra_similarity(vectors, np.array([0])), [1 / np.sqrt(n)], rtol=1e-6
    )
    np.testing.assert_allclose(explained_variance_first_component(vectors), 1 / n, rtol=1e-10)


def test_antipodal_pairs():
    """Pairs ±v in different sentences: every cross cosine is -1 for a word made of one
    such pair, so SelfSim and anisotropy are -1; MEV is 1 (rank one, uncentered)."""
    rng = np.random.default_rng(4)
    v = rng.standard_normal(5)
    w = rng.standard_normal(5)
    vectors = np.stack([v, -2.0 * v, w, -0.5 * w])
    unit = unit_rows(vectors)
    # two words: {v, -2v} and {w, -w/2}, each occurrence in its own sentence
    got = self_similarity(unit, np.array([0, 2]), np.arange(4))
    np.testing.assert_allclose(got, [-1.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(anisotropy_baseline(unit[:2], np.array([0, 1])), -1.0, atol=1e-6)
    np.testing.assert_allclose(explained_variance_first_component(vectors[:2]), 1.0, rtol=1e-10)
    # Anisotropy over all four: the 12 ordered cross pairs are 4 × (-1) plus 8 pairs between
    # ±v and ±w whose cosines cancel in sign pairs (c, -c, -c, c), so the mean is -4/12.
    np.testing.assert_allclose(anisotropy_baseline(unit, np.arange(4)), -1 / 3, atol=1e-6)


@pytest.mark.parametrize(("n", "d"), [(6, 10), (10, 6)])
def test_mev_known_spectrum(n, d):
    """X = U diag(s) Vᵀ with orthonormal columns of U and V has singular values s, so
    MEV = s₁² / Σ s²."""
    rng = np.random.default_rng(n * 100 + d)
    k = min(n, d)
    u = random_orthogonal(rng, n)[:, :k]
    v = random_orthogonal(rng, d)[:, :k]
    s = np.array([5.0, 3.0, 2.0, 1.0, 0.5, 0.25])[:k]
    matrix = u @ np.diag(s) @ v.T
    expected = s[0] ** 2 / np.sum(s**2)
    np.testing.assert_allclose(explained_variance_first_component(matrix), expected, rtol=1e-10)


def test_mev_centered_known_spectrum():
    """Centered MEV on X = 1 mᵀ + U diag(s) Vᵀ where U's columns are orthonormal and
    orthogonal to the all-ones vector: centering removes exactly 1 mᵀ (the columns of
    U diag(s) Vᵀ already have zero mean), leaving singular values s. The uncentered MEV
    is dominated by the big offset m and must differ."""
    rng = np.random.default_rng(9)
    n, d, k = 12, 7, 4
    basis = random_orthogonal(rng, n)
    # Orthonormal basis whose first vector is 1/√n: QR of [1, random] keeps that direction.
    q, _ = np.linalg.qr(np.column_stack([np.ones(n), basis[:, 1:]]))
    u = q[:, 1 : k + 1]  # orthonormal, each column orthogonal to 1 (zero mean)
    v = random_orthogonal(rng, d)[:, :k]
    s = np.array([4.0, 2.0, 1.5, 1.0])
    offset = 10.0 * rng.standard_normal(d)
    matrix = np.ones((n, 1)) * offset + u @ np.diag(s) @ v.T
    assert np.linalg.norm(matrix.mean(axis=0) - offset) < 1e-9
    expected = s[0] ** 2 / np.sum(s**2)
    got = explained_variance_first_component(matrix, centered=True)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert explained_variance_first_component(matrix) > expected + 0.1


# --------------------------------------------------------------------------------------
# 3. Invariances
# --------------------------------------------------------------------------------------


def test_self_similarity_and_anisotropy_invariant_to_row_rescaling():
    """Cosines ignore the length of each vector: rescaling rows by arbitrary positive factors
    leaves SelfSim and the anisotropy baseline unchanged."""
    words, sentences, vectors = random_occurrences(13, 4, 50, 8, 6)
    words, sentences, vectors, word_starts, context_starts = sorted_occurrences(
        words, sentences, vectors
    )
    scales = np.random.default_rng(14).uniform(0.01, 100.0, (len(vectors), 1))
    before = self_similarity(unit_rows(vectors), word_starts, context_starts)
    after = self_similarity(unit_rows(vectors * scales), word_starts, context_starts)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6, equal_nan=True)

    order = np.argsort(sentences, kind="stable")
    sentence_starts = run_starts(sentences[order])
    a_before = anisotropy_baseline(unit_rows(vectors[order]), sentence_starts)
    a_after = anisotropy_baseline(unit_rows((vectors * scales)[order]), sentence_starts)
    np.testing.assert_allclose(a_after, a_before, rtol=1e-5)


@pytest.mark.parametrize("shape", [(7, 12), (15, 5)])
def test_mev_uncentered_invariant_to_rotation_and_row_permutation(shape):
    """Singular values are unchanged by X → X Q (Q orthogonal) and by permuting rows."""
    rng = np.random.default_rng(17)
    matrix = rng.standard_normal(shape) + 0.3
    base = explained_variance_first_component(matrix)
    rotated = matrix @ random_orthogonal(rng, shape[1])
    permuted = matrix[rng.permutation(shape[0])]
    np.testing.assert_allclose(explained_variance_first_component(rotated), base, rtol=1e-10)
    np.testing.assert_allclose(explained_variance_first_component(permuted), base, rtol=1e-10)
    assert 0 < base < 1


def test_intra_similarity_invariant_to_rotation():
    """Rotating all vectors by one orthogonal matrix preserves norms, means and cosines."""
    rng = np.random.default_rng(19)
    vectors = rng.standard_normal((25, 9)) + 0.5
    starts = np.array([0, 4, 5, 13])
    rotated = vectors @ random_orthogonal(rng, 9)
    np.testing.assert_allclose(
        intra_similarity(rotated, starts), intra_similarity(vectors, starts), rtol=1e-5
    )


def test_float16_input_close_to_float64():
    """Half-precision inputs are accumulated in float64: results stay within float16
    rounding (~1e-3) of the float64 results, and are float64 arrays."""
    words, sentences, vectors = random_occurrences(23, 5, 80, 10, 16)
    words, sentences, vectors, word_starts, context_starts = sorted_occurrences(
        words, sentences, vectors
    )
    half = vectors.astype(np.float16)

    ss64 = self_similarity(unit_rows(vectors), word_starts, context_starts)
    ss16 = self_similarity(unit_rows(half), word_starts, context_starts)
    # Also pass float16 unit vectors straight in (storage dtype of a cache, say).
    ss16u = self_similarity(unit_rows(vectors).astype(np.float16), word_starts, context_starts)
    assert ss16.dtype == ss16u.dtype == np.float64
    np.testing.assert_allclose(ss16, ss64, atol=3e-3, equal_nan=True)
    np.testing.assert_allclose(ss16u, ss64, atol=3e-3, equal_nan=True)

    starts = np.array([0, 10, 30, 55])
    np.testing.assert_allclose(
        intra_similarity(half, starts), intra_similarity(vectors, starts), atol=3e-3
    )
    for centered in (False, True):
        np.testing.assert_allclose(
            explained_variance_first_component(half, centered),
            explained_variance_first_component(vectors, centered),
            atol=3e-3,
        )
    order = np.argsort(sentences, kind="stable")
    sentence_starts = run_starts(sentences[order])
    np.testing.assert_allclose(
        anisotropy_baseline(unit_rows(half[order]).astype(np.float16), sentence_starts),
        anisotropy_baseline(unit_rows(vectors[order]), sentence_starts),
        atol=3e-3,
    )


def test_half_precision_storage_accumulates_in_float64():
    """The module promises float64 accumulation whatever the input dtype: on many float16
    unit rows, results equal those for the very same values cast to float64 (summing
    20,000 rows in float16 would be off by ~1e-3 or overflow)."""
    rng = np.random.default_rng(29)
    n_rows, d = 20_000, 8
    unit16 = unit_rows(rng.standard_normal((n_rows, d)) + 2.0).astype(np.float16)
    unit64 = unit16.astype(np.float64)
    sentence_starts = np.arange(0, n_rows, 4)
    np.testing.assert_allclose(
        anisotropy_baseline(unit16, sentence_starts),
        anisotropy_baseline(unit64, sentence_starts),
        rtol=1e-10,
    )
    word_starts = np.array([0, n_rows // 2])
    np.testing.assert_allclose(
        self_similarity(unit16, word_starts, sentence_starts),
        self_similarity(unit64, word_starts, sentence_starts),
        rtol=1e-10,
    )


# --------------------------------------------------------------------------------------
# 4. Error paths
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.0, np.nan, np.inf, -np.inf])
def test_unit_rows_rejects_zero_and_non_finite_rows(bad):
    """A zero row has no direction and a NaN/inf row no meaningful one: ValueError."""
    vectors = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    if bad == 0.0:
        vectors[1] = 0.0
    else:
        vectors[1, 1] = bad
    with pytest.raises(ValueError, match="finite and non-zero"):
        unit_rows(vectors)


def test_unit_rows_normalizes():
    """Valid rows come back as float32 unit vectors pointing the same way."""
    vectors = np.array([[3.0, 4.0], [-1e-3, 0.0]])
    unit = unit_rows(vectors)
    assert unit.dtype == np.float32
    np.testing.assert_allclose(unit, [[0.6, 0.8], [-1.0, 0.0]], rtol=1e-6)


def test_intra_similarity_rejects_zero_row():
    """IntraSim normalizes each raw row, so a zero vector in a sentence is an error."""
    vectors = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError):
        intra_similarity(vectors, np.array([0, 2]))


# --------------------------------------------------------------------------------------
# 5. MEV baseline from a random sample
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("centered", [False, True])
def test_explained_variance_baseline_reproducible_and_matches_sample(centered):
    """Same seed → same value; the value is the SVD MEV of exactly the rows a generator
    with that seed draws (without replacement); different seeds give different samples."""
    data_rng = np.random.default_rng(31)
    vectors = data_rng.standard_normal((200, 10)) + data_rng.standard_normal(10)
    sample_size = 25

    (first,) = explained_variance_baseline(
        vectors, sample_size, np.random.default_rng(123), centered=centered
    )
    (second,) = explained_variance_baseline(
        vectors, sample_size, np.random.default_rng(123), centered=centered
    )
    assert first == second

    rows = np.random.default_rng(123).choice(len(vectors), size=sample_size, replace=False)
    assert len(set(rows.tolist())) == sample_size
    np.testing.assert_allclose(first, ref_mev(vectors[rows], centered), rtol=1e-10)

    others = {
        explained_variance_baseline(
            vectors, sample_size, np.random.default_rng(seed), centered=centered
        )[0]
        for seed in range(5)
    }
    assert len(others | {first}) > 1


def test_explained_variance_baseline_sample_larger_than_data_uses_all_rows():
    """A sample size beyond the number of rows takes every row once: the full-data MEV,
    whatever the seed."""
    vectors = np.random.default_rng(37).standard_normal((12, 5)) + 1.0
    full = ref_mev(vectors)
    for seed in (0, 1):
        (got,) = explained_variance_baseline(vectors, 1000, np.random.default_rng(seed))
        np.testing.assert_allclose(got, full, rtol=1e-10)


def test_spearman_correlation_equals_scipy_with_ties_and_missing_values():
    from scipy.stats import spearmanr

    from contextuality.measures.ranks import spearman_correlation

    rng = np.random.default_rng(3)
    x = rng.integers(0, 6, size=200).astype(float)  # many ties
    y = x + rng.normal(size=200)
    x[[3, 17]] = np.nan
    y[40] = np.nan
    expected = spearmanr(x, y, nan_policy="omit").statistic
    assert spearman_correlation(x, y) == pytest.approx(expected, abs=1e-12)
    assert np.isnan(spearman_correlation([1.0, 2.0], [3.0, 4.0]))
    assert np.isnan(spearman_correlation([1.0, 1.0, 1.0], [3.0, 4.0, 5.0]))


def test_spearman_correlation_ignores_rounding_noise_between_tied_values():
    """Two SelfSims of exactly 1 from different summation orders differ by an ulp; ρ must
    be that of the exact tie whichever of them rounding made larger."""
    from contextuality.measures.ranks import spearman_correlation

    selfsim = np.array([1.0, 0.69, 0.58, 0.61, 0.76, 1.0, 0.75])
    count = np.array([5.0, 3.0, 2.0, 9.0, 7.0, 2.0, 4.0])
    tied = spearman_correlation(selfsim, count)
    for noisy in (np.nextafter(1.0, 0.0), np.nextafter(1.0, 2.0)):
        perturbed = selfsim.copy()
        perturbed[0] = noisy
        assert spearman_correlation(perturbed, count) == tied
        perturbed[0], perturbed[5] = 1.0, noisy
        assert spearman_correlation(perturbed, count) == tied
    separated = selfsim.copy()
    separated[5] = 1.0 - 1e-6  # a real difference still orders the two
    assert spearman_correlation(separated, count) != tied
