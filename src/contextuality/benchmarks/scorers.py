"""Scorers: a benchmark's read table and a vocabulary's vectors in, a `Score` out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from contextuality.benchmarks.vectors import (
    OovPolicy,
    ScoringProtocol,
    WordVectors,
    check_oov,
    check_protocol,
    unit_rows,
)
from contextuality.configuration.schema import default

COSMUL_EPSILON = 1e-3
# What a scorer does unless told: config ``static``'s defaults (whether the benchmarks'
# words are lowercased, what an out-of-vocabulary word gets), as `ScoringSettings` reads them.
LOWERCASE: bool = default("static", "lowercase")
OOV: OovPolicy = default("static", "oov")


@dataclass(frozen=True)
class Score:
    """A benchmark result.

    `value`: the benchmark's metric (Spearman ρ, accuracy or purity, as a fraction).
    `coverage`: share of the benchmark's items (pairs, questions, words) with every word in
    the vocabulary, in [0, 1]. `n`: number of items the value was computed over (all items
    with ``oov="mean"``, the covered ones with ``oov="skip"``).
    """

    value: float
    coverage: float
    n: int


def _spearman(model: np.ndarray, gold: np.ndarray) -> float:
    """Spearman ρ; NaN with fewer than 2 items or a constant side (undefined)."""
    if len(model) < 2 or np.ptp(model) == 0 or np.ptp(gold) == 0:
        return math.nan
    from scipy.stats import spearmanr  # here: the workflow's start-up needs no scipy.stats

    return float(spearmanr(model, gold).statistic)


def score_similarity(
    pairs: pd.DataFrame, vectors: WordVectors, lowercase: bool = LOWERCASE, oov: OovPolicy = OOV
) -> Score:
    """Spearman ρ between cos(word1, word2) and the human score (columns of `read_similarity`).

    Coverage: share of pairs with both words in the vocabulary. With ``oov="mean"`` an OOV
    word is the mean vector; with ``"skip"`` its pairs are left out.
    """
    check_oov(oov)
    # A row for every word (the mean for an OOV one); `oov` then chooses the pairs kept.
    first, found_first = vectors.lookup(pairs["word1"].tolist(), lowercase, "mean")
    second, found_second = vectors.lookup(pairs["word2"].tolist(), lowercase, "mean")
    covered = found_first & found_second
    keep = covered if oov == "skip" else np.ones(len(pairs), dtype=bool)
    cosines = np.sum(unit_rows(first[keep]) * unit_rows(second[keep]), axis=1)
    value = _spearman(cosines, pairs["score"].to_numpy(dtype=np.float64)[keep])
    return Score(value, float(covered.mean()), int(keep.sum()))


def solve_analogies(
    questions: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = LOWERCASE,
    batch_size: int = 256,
    protocol: ScoringProtocol = "standard",
) -> pd.DataFrame:
    """Answer a : b :: c : ? by 3CosAdd and 3CosMul over the whole vocabulary.

    All vocabulary vectors are unit-normalized. An OOV question word is the mean vector,
    unit-normalized under the standard protocol and left as it is under ``"paper"``
    (`vectors` as from `paper_vectors`, whose mean of unit rows is shorter than a word's).
    3CosAdd: argmax over candidates d' of cos(d', b) − cos(d', a) + cos(d', c), which is
    argmax cos(d', b − a + c). 3CosMul: argmax of s(d', b)·s(d', c) / (s(d', a) + ε) with
    s = (cos + 1)/2 ∈ [0, 1] and ε = 1e-3. Candidates are the vocabulary's word forms
    (`WordVectors.candidate_rows`) except a, b and c. Cosines (for the OOV stand-in: dot
    products) of each batch's distinct question words with the candidates come from one
    matrix product.

    Returns one row per question (same index): covered (all four words in the vocabulary),
    predicted_3cosadd, predicted_3cosmul (vocabulary words), correct_3cosadd,
    correct_3cosmul (an OOV answer d is never correct). Solved once for `vectors` and each
    set of questions and settings (`WordVectors.solved_analogies`), a copy returned.
    """
    check_protocol(protocol)
    asked = pd.util.hash_pandas_object(questions[list("abcd")]).to_numpy()
    key = (asked.tobytes(), lowercase, batch_size, protocol)
    if key not in vectors.solved_analogies:
        vectors.solved_analogies[key] = _solve_analogies(
            questions, vectors, lowercase, batch_size, protocol
        )
    return vectors.solved_analogies[key].copy()


def _solve_analogies(
    questions: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool,
    batch_size: int,
    protocol: ScoringProtocol,
) -> pd.DataFrame:
    """`solve_analogies`, computed."""
    rows = {column: vectors.indices(questions[column].tolist(), lowercase) for column in "abcd"}
    candidates = vectors.candidate_rows(lowercase)
    unit = unit_rows(vectors.matrix.astype(np.float32))
    stand_in = vectors.mean_vector.astype(np.float32)
    if protocol == "standard":
        stand_in = unit_rows(stand_in)
    # Row n of the extended table is the mean vector, standing in for every OOV word.
    n_words = len(vectors.words)
    extended = np.vstack([unit, stand_in[None, :]])
    candidate_vectors = np.ascontiguousarray(unit[candidates])
    column_of = np.full(n_words + 1, -1, dtype=np.int64)
    column_of[candidates] = np.arange(len(candidates))
    query = {column: np.where(rows[column] >= 0, rows[column], n_words) for column in "abc"}

    predicted = {"3cosadd": [], "3cosmul": []}
    for start in range(0, len(questions), batch_size):
        stop = min(start + batch_size, len(questions))
        batch = {column: query[column][start:stop] for column in "abc"}
        distinct, inverse = np.unique(np.concatenate(list(batch.values())), return_inverse=True)
        cosines = extended[distinct] @ candidate_vectors.T
        size = stop - start
        cos_a, cos_b, cos_c = (cosines[inverse[i * size : (i + 1) * size]] for i in range(3))
        add = cos_b - cos_a + cos_c
        mul = (cos_b + 1) * (cos_c + 1) / (2 * (cos_a + 1 + 2 * COSMUL_EPSILON))
        batch_rows = np.arange(size)
        for column in "abc":
            excluded = column_of[batch[column]]
            valid = excluded >= 0
            add[batch_rows[valid], excluded[valid]] = -np.inf
            mul[batch_rows[valid], excluded[valid]] = -np.inf
        predicted["3cosadd"].append(candidates[np.argmax(add, axis=1)])
        predicted["3cosmul"].append(candidates[np.argmax(mul, axis=1)])

    words = np.asarray(vectors.words, dtype=object)
    result = pd.DataFrame(
        {"covered": np.all([rows[column] >= 0 for column in "abcd"], axis=0)},
        index=questions.index,
    )
    for method, chunks in predicted.items():
        answer = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
        result[f"predicted_{method}"] = words[answer]
        result[f"correct_{method}"] = (answer == rows["d"]) & (rows["d"] >= 0)
    return result


def score_analogy(
    questions: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = LOWERCASE,
    oov: OovPolicy = OOV,
    method: Literal["3cosadd", "3cosmul"] = "3cosadd",
    protocol: ScoringProtocol = "standard",
) -> Score:
    """Analogy accuracy (fraction correct) by `method` under `protocol` (see
    `solve_analogies`).

    Coverage: share of questions with all four words in the vocabulary. With
    ``oov="mean"`` every question counts (one with an OOV answer is wrong); with
    ``"skip"`` only covered questions are asked.
    """
    check_oov(oov)
    check_protocol(protocol)
    if method not in ("3cosadd", "3cosmul"):
        raise ValueError(f"method must be '3cosadd' or '3cosmul', not {method!r}")
    covered = np.all(
        [vectors.indices(questions[c].tolist(), lowercase) >= 0 for c in "abcd"], axis=0
    )
    asked = questions[covered] if oov == "skip" else questions
    if asked.empty:
        return Score(math.nan, float(covered.mean()), 0)
    solved = solve_analogies(asked, vectors, lowercase, protocol=protocol)
    return Score(float(solved[f"correct_{method}"].mean()), float(covered.mean()), len(asked))


def score_semeval2012(
    table: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = LOWERCASE,
    oov: OovPolicy = OOV,
    relation: Literal["cosine", "dot"] = "cosine",
) -> Score:
    """SemEval-2012 Task 2: Spearman ρ per subcategory, averaged over subcategories.

    `table` as from `read_semeval2012`. A pair X:Y is rated by its offset o = Y − X:
    ``relation="cosine"``: mean over the subcategory's paradigm pairs p of cos(o, o_p);
    ``"dot"``: o · mean(o_p), the word-embeddings-benchmarks rating. A subcategory whose
    ratings are all equal (e.g. all words OOV) counts ρ = 0, as in that package. With
    ``oov="skip"``, OOV pairs (rated or paradigm) are left out, and so is a subcategory
    left with no paradigm or fewer than 2 rated pairs. Coverage and `n` count rated pairs.
    """
    check_oov(oov)
    if relation not in ("cosine", "dot"):
        raise ValueError(f"relation must be 'cosine' or 'dot', not {relation!r}")
    correlations = []
    covered_total = asked_total = 0
    for _, group in table.groupby("subcategory", sort=False):
        x, found_x = vectors.lookup(group["x"].tolist(), lowercase, "mean")
        y, found_y = vectors.lookup(group["y"].tolist(), lowercase, "mean")
        found = found_x & found_y
        is_paradigm = group["paradigm"].to_numpy(dtype=bool)
        covered_total += int(np.sum(found & ~is_paradigm))
        usable = found if oov == "skip" else np.ones(len(group), dtype=bool)
        paradigm, rated = usable & is_paradigm, usable & ~is_paradigm
        if not paradigm.any() or rated.sum() < 2:
            continue
        offsets = y - x
        if relation == "cosine":
            ratings = (unit_rows(offsets[rated]) @ unit_rows(offsets[paradigm]).T).mean(axis=1)
        else:
            ratings = offsets[rated] @ offsets[paradigm].mean(axis=0)
        rho = _spearman(ratings, group["gold"].to_numpy(dtype=np.float64)[rated])
        correlations.append(0.0 if math.isnan(rho) else rho)
        asked_total += int(rated.sum())
    n_rated = int((~table["paradigm"].astype(bool)).sum())
    coverage = covered_total / n_rated if n_rated else math.nan
    value = float(np.mean(correlations)) if correlations else math.nan
    return Score(value, coverage, asked_total)


def cluster_purity(gold: Sequence, predicted: Sequence) -> float:
    """Purity: (1/N) Σ over clusters of the size of its most frequent gold category."""
    if len(gold) != len(predicted) or len(gold) == 0:
        raise ValueError("gold and predicted must be non-empty and of equal length")
    table = pd.crosstab(np.asarray(predicted), np.asarray(gold))
    return float(table.to_numpy().max(axis=1).sum() / len(gold))


def score_categorization(
    items: pd.DataFrame,
    vectors: WordVectors,
    lowercase: bool = LOWERCASE,
    oov: OovPolicy = OOV,
    *,
    seed: int,
    protocol: ScoringProtocol = "standard",
) -> Score:
    """Purity of a clustering of the words' vectors into k = number of gold categories.

    `items` as from `read_categorization`. Standard protocol: scikit-learn KMeans with
    ``n_init=10`` and ``random_state=seed`` on the unit-normalized vectors (normalizing
    makes Euclidean k-means follow cosine similarity). ``"paper"``: with the words in a
    seeded random order, the best purity of six clusterings (Ward; average and complete
    linkage under the cosine and the Euclidean metric; that KMeans) of the vectors as given
    (`vectors` as from `paper_vectors`). Coverage: share of words in the vocabulary; with
    ``oov="skip"`` OOV words are left out (k then counts the categories of the words kept).
    """
    from sklearn.cluster import KMeans

    check_oov(oov)
    check_protocol(protocol)
    matrix, found = vectors.lookup(items["word"].tolist(), lowercase, "mean")
    keep = found if oov == "skip" else np.ones(len(items), dtype=bool)
    gold = items["category"].to_numpy()[keep]
    if len(gold) == 0:
        return Score(math.nan, float(found.mean()), 0)
    clusters = min(len(set(gold)), len(gold))
    if protocol == "paper":
        purity = _best_purity(gold, matrix[keep], clusters, seed)
    else:
        labels = KMeans(n_clusters=clusters, n_init=10, random_state=seed).fit_predict(
            unit_rows(matrix[keep])
        )
        purity = cluster_purity(gold, labels)
    return Score(purity, float(found.mean()), len(gold))


def _best_purity(gold: np.ndarray, matrix: np.ndarray, clusters: int, seed: int) -> float:
    """``web``'s ``evaluate_categorization(method="all")``: the items in a seeded random
    order, then the best purity over Ward linkage, average and complete linkage under the
    cosine and the Euclidean metric, and seeded KMeans (``n_init=10``)."""
    from sklearn.cluster import AgglomerativeClustering, KMeans

    order = np.random.RandomState(seed).choice(len(gold), len(gold), replace=False)
    clusterings = [AgglomerativeClustering(n_clusters=clusters, linkage="ward")]
    clusterings += [
        AgglomerativeClustering(n_clusters=clusters, metric=metric, linkage=linkage)
        for metric in ("cosine", "euclidean")
        for linkage in ("average", "complete")
    ]
    clusterings.append(KMeans(n_clusters=clusters, n_init=10, random_state=seed))
    return max(
        cluster_purity(gold[order], clustering.fit_predict(matrix[order]))
        for clustering in clusterings
    )
