"""The neighbour search past exact O(n²) (`geometry.search`, `geometry.index`): an index whose
recall is measured against the exact search, the exact search it falls back to, and the
recall carried into the alignment table."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from contextuality.errors import ConfigError
from contextuality.geometry.index import euclidean_neighbours, index_neighbours
from contextuality.geometry.neighbours import Neighbours, cosine_neighbours, mutual_knn
from contextuality.geometry.search import (
    TRAINING_ROWS_PER_LIST,
    SearchSettings,
    exact_neighbours,
    share_found,
    without_self,
)

pytest.importorskip("faiss")

# What the index must reach at the default probes (docs/instruments.md quotes them).
RECALL_AT_LEAST = 0.99
MUTUAL_KNN_WITHIN = 0.005


def _clustered(n: int, width: int, seed: int, spread: float = 0.7) -> np.ndarray:
    """Rows around 100 random centres with a shared offset, as embeddings are."""
    random = np.random.default_rng(seed)
    centres = random.normal(size=(100, width)).astype(np.float32)
    rows = centres[random.integers(0, 100, n)]
    rows += spread * random.normal(size=(n, width)).astype(np.float32)
    return rows + 2.0 * random.normal(size=width).astype(np.float32)


def _units(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("method", ["hnsw", "ivf"])
def test_the_index_finds_the_exact_neighbours_closely_enough_for_mutual_knn(method):
    """At the default settings each index's recall is at least 0.99 and mutual k-NN
    between its neighbours and another layer's is within 0.005 of the exact value."""
    rows = _clustered(12_000, 48, seed=0)
    other = rows + 0.5 * np.random.default_rng(1).normal(size=rows.shape).astype(np.float32)
    search = SearchSettings(method=method)
    exact = [cosine_neighbours(layer, 10) for layer in (rows, other)]
    indexed = [
        cosine_neighbours(layer, 10, search=search, random=np.random.default_rng(2))
        for layer in (rows, other)
    ]
    assert min(found.recall for found in indexed) >= RECALL_AT_LEAST
    assert abs(mutual_knn(*indexed) - mutual_knn(*exact)) < MUTUAL_KNN_WITHIN
    shared = (np.sort(indexed[0].indices, axis=1) == np.sort(exact[0].indices, axis=1)).all(1)
    assert shared.mean() > 0.9
    np.testing.assert_allclose(  # the cosines of the neighbours it finds are exact
        indexed[0].cosines[shared], exact[0].cosines[shared], atol=1e-6
    )


def test_the_measured_recall_is_the_share_of_exact_neighbours_found():
    """With one probe of many cells the index misses neighbours; the recall measured on
    every row is the brute-force share, and on a sample it is close to it."""
    rows = _clustered(6_000, 32, seed=3, spread=2.0)
    search = SearchSettings(method="ivf", lists=80, probes=1, recall_target=0, recall_queries=6_000)
    found = cosine_neighbours(rows, 10, search=search, random=np.random.default_rng(4))
    exact, _ = exact_neighbours(_units(rows), np.arange(len(rows)), 10, "cpu")
    brute = np.mean(
        [np.isin(one, two).sum() / 10 for one, two in zip(found.indices, exact, strict=True)]
    )
    assert 0.1 < brute < 0.95
    assert found.recall == pytest.approx(brute, abs=1e-12)
    queries = np.sort(np.random.default_rng(5).choice(len(rows), 500, replace=False))
    assert share_found(_units(rows), found.indices, queries) == pytest.approx(brute, abs=0.05)


def test_the_probes_are_doubled_until_the_calibrated_recall_reaches_its_target():
    """From one probe of 80 cells the search doubles its probes until the recall on its
    calibration queries reaches the target, and the recall measured on other queries is
    near it; with a target of 0 it keeps the one probe and its low recall; a target of 1
    ends at every cell, where nothing is missed."""
    units = _units(_clustered(6_000, 32, seed=3, spread=2.0))
    settings = {"method": "ivf", "lists": 80, "probes": 1, "recall_queries": 1_000}
    searched = {
        target: index_neighbours(
            units, 10, SearchSettings(**settings, recall_target=target), np.random.default_rng(4)
        )
        for target in (0.0, 0.99, 1.0)
    }
    assert searched[0.0].breadth == 1 and searched[0.0].recall < 0.95
    assert 1 < searched[0.99].breadth < 80 and searched[0.99].recall >= 0.98
    assert searched[0.99].breadth & (searched[0.99].breadth - 1) == 0  # doubled from 1
    assert searched[1.0].breadth == 80 and searched[1.0].recall == 1.0


def test_a_row_tied_with_an_exact_neighbour_counts_as_found():
    """Repeated vectors tie: the exact search takes the lower rows among them, another
    search may take other copies, which are as near and count as found; a farther row
    does not."""
    random = np.random.default_rng(20)
    copies = np.repeat(random.normal(size=(1, 8)), 12, axis=0)
    units = _units(np.vstack([copies, random.normal(size=(200, 8))]).astype(np.float32))
    exact, _ = exact_neighbours(units, np.array([0]), 5, "cpu")
    assert exact[0].tolist() == [1, 2, 3, 4, 5]
    others = np.zeros((len(units), 5), dtype=np.int64)
    others[0] = [11, 10, 9, 8, 7]
    assert share_found(units, others, np.array([0])) == 1.0
    others[0, 0] = 150
    assert share_found(units, others, np.array([0])) == 0.8


@pytest.mark.parametrize("method", ["hnsw", "ivf"])
def test_the_same_seed_gives_the_same_neighbours_and_recall(method):
    rows = _clustered(4_000, 16, seed=6)
    search = SearchSettings(method=method, breadth=4, probes=2, recall_queries=300)
    first, again = (
        cosine_neighbours(rows, 5, search=search, random=np.random.default_rng(7)) for _ in range(2)
    )
    np.testing.assert_array_equal(first.indices, again.indices)
    assert first.recall == again.recall


def test_auto_searches_exactly_up_to_its_size_and_the_exact_search_is_unchanged():
    rows = _clustered(600, 8, seed=8)
    search = SearchSettings(exact_up_to=600)
    assert search.indices_for(600) == () and search.indices_for(601) == ("hnsw", "ivf")
    assert SearchSettings(method="exact").indices_for(10**9) == ()
    found, plain = cosine_neighbours(rows, 7, search=search), cosine_neighbours(rows, 7)
    np.testing.assert_array_equal(found.indices, plain.indices)
    assert found.recall == 1.0


def test_the_cells_are_four_root_n_and_each_has_rows_to_train_on():
    assert SearchSettings().lists_for(1_000_000) == 4_000
    assert SearchSettings().lists_for(10_000) == 10_000 // TRAINING_ROWS_PER_LIST
    assert SearchSettings(lists=50).lists_for(100_000) == 50
    assert SearchSettings().lists_for(10) == 1


def test_a_row_found_as_its_own_neighbour_is_left_out_and_a_short_list_sorts_last():
    found = np.array([[3, 0, 1], [1, 2, 0], [2, 0, -1]])
    cosines = np.array([[0.9, 0.8, 0.7], [1.0, 0.6, 0.5], [1.0, 0.4, -3.0e38]], np.float32)
    indices, values = without_self(found, cosines, 2)
    np.testing.assert_array_equal(indices, [[3, 1], [2, 0], [0, -1]])
    assert values[0].tolist() == pytest.approx([0.9, 0.7]) and values[2, 1] == -np.inf


def test_settings_are_checked_and_a_missing_faiss_is_named(monkeypatch):
    with pytest.raises(ConfigError, match=r"search.method: 'annoy' is none of"):
        SearchSettings(method="annoy")
    with pytest.raises(ConfigError, match="links"):
        SearchSettings(links=1)
    with pytest.raises(ConfigError, match="probes"):
        SearchSettings(probes=0)
    with pytest.raises(ConfigError, match=r"recall_target must be in \[0.0, 1.0\], got 1.5"):
        SearchSettings(recall_target=1.5)
    monkeypatch.setitem(sys.modules, "faiss", None)
    for method in ("hnsw", "ivf"):
        with pytest.raises(ConfigError, match=r"pip install 'contextuality\[scale\]'"):
            SearchSettings(method=method)


def test_the_alignment_table_gives_each_pair_the_lower_recall_of_its_two_searches():
    """knn_recall is 1 where the search is exact; with an index each pair of
    layers gets the lower of its two layers' measured recall (stream neighbour_search),
    and mutual k-NN is that of the index's neighbours."""
    from contextuality.configuration.random_streams import generator
    from contextuality.geometry.alignment import (
        AlignmentSettings,
        SampledLayers,
        SampleRows,
        alignment_between,
    )

    n = 3_000
    layers = {layer: _clustered(n, 12, seed=10 + layer, spread=1.5) for layer in range(2)}
    sampled = SampledLayers(layers, {})
    sample = SampleRows(np.ones(n, dtype=bool), np.arange(n) // 5, sampled=False)
    exact = AlignmentSettings(k=5, permutations=1, bootstrap=0, baselines=())
    table = alignment_between(("m", sampled), None, sample, 3, 0.95, exact).table
    assert (table["knn_recall"] == 1.0).all()
    search = {"method": "ivf", "exact_up_to": 1_000, "lists": 40, "probes": 1}
    search |= {"recall_target": 0, "recall_queries": 400}
    indexed = AlignmentSettings(k=5, permutations=1, bootstrap=0, baselines=(), search=search)
    table = alignment_between(("m", sampled), None, sample, 3, 0.95, indexed).table
    found = [
        cosine_neighbours(
            layers[layer], 5, search=indexed.search, random=generator(3, "neighbour_search")
        )
        for layer in range(2)
    ]
    every = table[table["occurrences"] == "all"].set_index(["layer_a", "layer_b"])
    assert every.loc[(0, 1), "knn_recall"] == min(found[0].recall, found[1].recall) < 1
    assert every.loc[(0, 0), "knn_recall"] == found[0].recall
    assert every.loc[(0, 1), "mutual_knn"] == pytest.approx(mutual_knn(*found))


@pytest.mark.parametrize("baseline", ["word_identity", "word_position"])
@pytest.mark.parametrize("k", [1, 6])
def test_the_word_baselines_neighbours_by_their_codes_are_the_exact_search_s(baseline, k):
    """One-hot rows (a frequent word, many small ones, words seen once, a crowded first
    position) get from their codes the neighbours and cosines the exact search gives,
    ties broken by the lower row alike."""
    from contextuality.geometry.baselines import word_baselines
    from contextuality.geometry.neighbours import _unit_rows
    from contextuality.geometry.search import categorical_neighbours, one_hot_codes

    random = np.random.default_rng(12)
    words = random.zipf(1.6, 900) % 150
    positions = np.where(random.random(900) < 0.3, 0, random.integers(1, 25, 900))
    rows = word_baselines(words, positions)[baseline].vectors[0]
    codes = one_hot_codes(rows)
    assert codes.shape == (900, 1 if baseline == "word_identity" else 2)
    indices, cosines = categorical_neighbours(codes, k)
    exact, exact_cosines = exact_neighbours(_unit_rows(rows), np.arange(900), k, "cpu")
    np.testing.assert_array_equal(indices, exact)
    np.testing.assert_allclose(cosines, exact_cosines, atol=1e-6)
    found = cosine_neighbours(rows, k)
    np.testing.assert_array_equal(found.indices, exact)


def test_only_rows_of_equal_one_hot_blocks_are_read_as_codes():
    from scipy import sparse

    from contextuality.geometry.search import one_hot_codes

    assert one_hot_codes(np.eye(3)) is None  # dense
    assert one_hot_codes(sparse.csr_matrix([[1.0, 0.0], [1.0, 1.0]])) is None  # unequal rows
    assert one_hot_codes(sparse.csr_matrix([[2.0, 0.0], [0.0, 1.0]])) is None  # unequal values
    np.testing.assert_array_equal(
        one_hot_codes(sparse.csr_matrix([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])), [[1, 2], [0, 2]]
    )


def _on_a_plane(n: int, seed: int) -> np.ndarray:
    """`n` points on a 2-dimensional plane in 10 dimensions, float64."""
    random = np.random.default_rng(seed)
    return random.random((n, 2)) @ random.normal(size=(2, 10))


def test_the_distance_index_finds_the_exact_neighbours_and_keeps_the_dimension():
    """By distance, the index finds nearly every exact neighbour at the default probes,
    its distances those of the points it finds, and TwoNN reads the plane's dimension
    from it as from the exact search; the recall it measures is the brute-force share."""
    from contextuality.geometry.dimension import (
        REPEAT_SPARE,
        DimensionSettings,
        neighbourhoods,
        twonn_curve,
    )

    points = _on_a_plane(8_000, seed=13)
    search = SearchSettings(method="hnsw", recall_queries=8_000)
    distances, indices, found_recall = euclidean_neighbours(
        points, 8, search, np.random.default_rng(14)
    )
    _, exact, exact_recall = euclidean_neighbours(points, 8)
    assert exact_recall == 1.0 and found_recall >= RECALL_AT_LEAST
    brute = np.mean([np.isin(one, two).sum() / 8 for one, two in zip(indices, exact, strict=True)])
    assert found_recall == pytest.approx(brute, abs=1e-12)
    rows = np.arange(len(points))[:, None]
    np.testing.assert_allclose(
        distances, np.linalg.norm(points[indices] - points[rows], axis=2), rtol=1e-12
    )
    settings = DimensionSettings(search=search)
    found = neighbourhoods(points, 8, settings.search, np.random.default_rng(14))
    deeper = euclidean_neighbours(points, 8 + REPEAT_SPARE, search, np.random.default_rng(14))
    assert found.recall == deeper[2]  # the search it made, with the spare neighbours
    np.testing.assert_allclose(found.distances, deeper[0][:, :8], rtol=1e-12)
    exact_curve = twonn_curve(neighbourhoods(points, 8), 1_000, 0.9, np.random.default_rng(0))
    index_curve = twonn_curve(found, 1_000, 0.9, np.random.default_rng(0))
    np.testing.assert_allclose(index_curve.dimension, exact_curve.dimension, rtol=0.02)
    assert RECALL_AT_LEAST <= index_curve.recall <= 1 and exact_curve.recall == 1.0
    assert index_curve.dimension[0] == pytest.approx(2.0, abs=0.15)


def test_the_curves_table_gives_each_curve_its_search_s_recall():
    """knn_recall of dimension_scales.tsv's rows: 1 for exact searches; with the index
    forced on a few probes, each curve's lowest recall, below 1."""
    from contextuality.api import geometry as api
    from contextuality.geometry.settings import GeometrySettings

    points = _on_a_plane(3_000, seed=16) + 0.01 * np.random.default_rng(17).normal(size=(3_000, 10))
    base = {"seed": 0, "confidence": 0.9, "sample_size": None}
    exact = api.intrinsic_dimension(points, settings=GeometrySettings.from_config(base))
    assert all(row["knn_recall"] == 1.0 for row in exact.curve_rows)
    search = {"method": "ivf", "lists": 40, "probes": 1, "recall_target": 0, "recall_queries": 500}
    indexed = api.intrinsic_dimension(
        points, settings=GeometrySettings.from_config(base | {"search": search})
    )
    recalls = {row["estimator"]: row["knn_recall"] for row in indexed.curve_rows}
    assert 0 < recalls["gride"] < 1 and recalls["twonn"] <= recalls["gride"]


@pytest.mark.parametrize("k", [1, 3, 7, 39, 40])
def test_the_top_k_take_the_lower_column_among_ties_as_a_full_sort_does(k):
    """Small integers tie everywhere, rows of distinct values nowhere, and a row's own
    column is -inf; every row's k largest, their order and which tied columns are taken
    equal a full sort by value, then column (k up to every column)."""
    import torch

    from contextuality.geometry.search import _top_lowest_rows

    rng = np.random.default_rng(21)
    similarities = rng.integers(0, 4, size=(300, 40)).astype(np.float32)
    similarities[:5] = 1.0  # a row of one value throughout
    similarities[100:200] = rng.permuted(np.tile(np.arange(40.0), (100, 1)), axis=1)
    similarities[np.arange(40), np.arange(40)] = -np.inf  # a query's own row
    values, columns = _top_lowest_rows(torch.from_numpy(similarities.copy()), k)
    expected = np.stack([np.lexsort((np.arange(40), -row))[:k] for row in similarities])
    np.testing.assert_array_equal(columns.numpy(), expected)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(similarities, expected, 1))


def test_auto_searches_exactly_where_the_recall_needs_most_of_the_rows():
    """Rows without clusters (Gaussian in 64 dimensions) need a large share of 1,500 rows
    compared a query for a recall of 0.99 (a graph of 64 links a row, an inverted file of
    40 cells): `auto` then gives the graph up for the exact search (its neighbours,
    recall 1), where ``hnsw`` and ``ivf`` keep their index."""
    from contextuality.geometry.search import SCAN_LIMITS

    rows = np.random.default_rng(22).normal(size=(1_500, 64)).astype(np.float32)
    settings = {"exact_up_to": 1_000, "links": 64, "breadth": 1, "recall_queries": 300}
    forced = {
        method: index_neighbours(
            _units(rows), 5, SearchSettings(method=method, lists=40, probes=1, **settings),
            np.random.default_rng(23),
        )
        for method in ("hnsw", "ivf")
    }  # fmt: skip
    assert all(forced[method].share > SCAN_LIMITS[method] for method in forced)
    found = cosine_neighbours(rows, 5, search=SearchSettings(**settings))
    exact = cosine_neighbours(rows, 5)
    np.testing.assert_array_equal(found.indices, exact.indices)
    assert found.recall == 1.0
    points = rows.astype(np.float64)
    _, indices, distance_recall = euclidean_neighbours(points, 5, SearchSettings(**settings))
    np.testing.assert_array_equal(indices, euclidean_neighbours(points, 5)[1])
    assert distance_recall == 1.0


def test_auto_tries_the_inverted_file_where_the_graph_gives_way(caplog):
    """A graph asked to search with a breadth at which a query meets half the rows (100
    candidates of 32 links, the bottom layer's, among 6,000 rows) gives way under `auto`;
    on clustered rows the inverted file then reaches the target with a few of its cells
    probed, and `auto` keeps it (its neighbours those of the exact
    search at its recall) rather than searching exactly; `hnsw` keeps its graph. Both
    giving way is `test_auto_searches_exactly_where_the_recall_needs_most_of_the_rows`."""
    rows = _units(_clustered(6_000, 32, seed=24, spread=0.5))
    settings = {"exact_up_to": 1_000, "links": 16, "breadth": 100, "lists": 60, "probes": 1}
    with caplog.at_level("INFO", logger="contextuality.geometry.index"):
        found = index_neighbours(rows, 5, SearchSettings(**settings), np.random.default_rng(25))
    assert "hnsw index of 6,000 rows" in caplog.text and "trying the next index" in caplog.text
    assert found is not None and found.recall >= 0.99
    assert found.breadth <= 0.25 * 60  # probes: a quarter of the cells at most
    graph = SearchSettings(method="hnsw", **settings)
    assert index_neighbours(rows, 5, graph, np.random.default_rng(25)).breadth == 100
    exact = exact_neighbours(rows, np.arange(6_000), 5, "cpu")[0]
    shared = [len(set(a) & set(b)) for a, b in zip(found.indices, exact, strict=True)]
    assert np.mean(shared) / 5 >= 0.99


def _repeated(distinct: int, width: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Clustered rows, each repeated 1 to 25 times and shuffled (an embedding layer's
    words at their positions), and each row's distinct row."""
    random = np.random.default_rng(seed)
    vectors = _clustered(distinct, width, seed)
    which = random.permutation(np.repeat(np.arange(distinct), random.integers(1, 26, distinct)))
    return vectors[which], which


def test_only_distinct_rows_are_indexed_each_with_its_copies_in_row_order():
    from contextuality.geometry.index import distinct_rows

    rows, which = _repeated(300, 16, seed=30)
    distinct = distinct_rows(rows)
    _, first = np.unique(which, return_index=True)
    np.testing.assert_array_equal(distinct.rows, rows[np.sort(first)])  # first occurrence order
    np.testing.assert_array_equal(distinct.rows[distinct.of_row], rows)
    for group in range(len(distinct.rows)):
        members = distinct.members[distinct.starts[group] : distinct.starts[group + 1]]
        np.testing.assert_array_equal(members, np.flatnonzero(distinct.of_row == group))
    assert distinct_rows(np.unique(rows, axis=0)) is None
    # Rows the float64 projection cannot tell apart (1e30 beside 1 and 2) are told apart
    # byte by byte.
    collided = distinct_rows(np.array([[1e30, 1.0], [1e30, 2.0], [1e30, 1.0]], dtype=np.float32))
    assert collided.of_row.tolist() == [0, 1, 0]


def test_expanding_distinct_neighbours_gives_their_copies_nearest_first():
    from contextuality.geometry.index import distinct_rows

    rows = np.array([[1.0], [2.0], [1.0], [3.0], [2.0], [1.0]], dtype=np.float32)
    distinct = distinct_rows(rows)  # distinct 0 (rows 0, 2, 5), 1 (rows 1, 4), 2 (row 3)
    found = np.array([[2, 1, -1], [0, -1, -1]])
    scores = np.array([[0.9, 0.8, -np.inf], [0.7, -np.inf, -np.inf]], dtype=np.float32)
    indices, values = distinct.expanded(found, scores, 4)
    assert indices.tolist() == [[3, 1, 4, -1], [0, 2, 5, -1]]
    np.testing.assert_allclose(values[0, :3], [0.9, 0.8, 0.8])


@pytest.mark.parametrize("method", ["hnsw", "ivf"])
def test_repeated_rows_are_searched_in_the_index_as_the_exact_search_finds_them(method):
    """Rows that mostly repeat others (an embedding layer's): the index of the distinct
    rows reaches its recall, a row with k copies or more has the k lowest other copies
    for neighbours as the exact search does, by cosine and by distance."""
    rows, which = _repeated(400, 16, seed=31)
    search = SearchSettings(method=method, links=8, recall_queries=500)
    units = _units(rows)
    found = index_neighbours(units, 5, search, np.random.default_rng(32))
    exact = cosine_neighbours(rows, 5)
    assert found is not None and found.recall >= RECALL_AT_LEAST
    assert mutual_knn(Neighbours(found.indices, found.scores), exact) > 0.98
    copies = np.bincount(which)[which] > 5
    np.testing.assert_array_equal(found.indices[copies], exact.indices[copies])
    assert (which[found.indices[copies]] == which[copies, None]).all()
    points = rows.astype(np.float64)
    by_distance = index_neighbours(
        rows, 5, search, np.random.default_rng(33), by_distance=True, exact_rows=points
    )
    assert by_distance is not None and by_distance.recall >= RECALL_AT_LEAST
    np.testing.assert_array_equal(by_distance.indices[copies], exact.indices[copies])
    assert (by_distance.scores[copies] == 0).all()


def test_the_share_compared_is_faiss_s_count_not_the_cells_share():
    """An inverted file of two cells, one holding nine rows in ten: a query from the rows
    probing one cell is compared with about 0.9² + 0.1² = 0.82 of them, as FAISS counts
    its distances, not the half of the cells it probes."""
    random = np.random.default_rng(31)
    rows = np.vstack([random.normal(size=(1_800, 8)), 50.0 + random.normal(size=(200, 8))])
    settings = SearchSettings(method="ivf", lists=2, probes=1, recall_target=0, recall_queries=500)
    found = index_neighbours(
        rows.astype(np.float32), 5, settings, np.random.default_rng(32), by_distance=True
    )
    assert found.breadth == 1
    assert found.share == pytest.approx(0.9**2 + 0.1**2, abs=0.05)
