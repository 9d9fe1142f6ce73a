"""Layers against a downstream task (after Skean et al. 2025, "Layer by Layer"). How well
each layer's sentence vectors score semantic textual similarity, and how each geometry
measure of the layers ranks them as that score does.

The task score of a layer is Spearman's ρ between the gold similarity of the STS pairs
and the cosine of the two sentences' vectors (`extraction.sentence_vectors`). Its
interval is a percentile bootstrap over pairs; the same draws of pairs serve every layer,
so that the scores' draws are paired across layers. A measure's agreement with the task is
Spearman's ρ across one model's layers between the measure and the score; its interval
is read from the score's draws (the uncertainty of the task score, the measure held at
its value), and its p-value is the exact share of orderings of the layers that agree at
least as strongly (a permutation test, every ordering where there are at most
`EXACT_ORDERINGS_UP_TO` layers).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

# Up to this many layers the permutation test enumerates every ordering (8! = 40,320).
EXACT_ORDERINGS_UP_TO = 8
SAMPLED_ORDERINGS = 40_000


def pair_cosines(vectors: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The (n_pairs,) float64 cosine between rows `left[i]` and `right[i]` of `vectors`
    (n_sentences, d); NaN where either vector is zero or not finite."""
    vectors = np.asarray(vectors, dtype=np.float64)
    a, b = vectors[np.asarray(left)], vectors[np.asarray(right)]
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = np.einsum("ij,ij->i", a, b) / norms
    return np.where(np.isfinite(cosines), cosines, np.nan)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ of each row of `x` with the same row of `y` (both (k, n)): Pearson's r
    of their average ranks."""
    rx = rankdata(x, axis=1) - (x.shape[1] + 1) / 2
    ry = rankdata(y, axis=1) - (y.shape[1] + 1) / 2
    numerator = (rx * ry).sum(axis=1)
    denominator = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return numerator / denominator


@dataclass(frozen=True)
class TaskScores:
    """Each layer's task score: ``table`` (layer, spearman, low, high, n_pairs, draws,
    level) and ``draws`` (n_draws, n_layers), the score of every layer on each bootstrap
    draw of pairs (the same draw for every layer)."""

    table: pd.DataFrame
    draws: np.ndarray


def task_scores(
    cosines: dict[int, np.ndarray],
    gold: np.ndarray,
    draws: int,
    rng: np.random.Generator,
    level: float = 0.95,
) -> TaskScores:
    """Spearman's ρ between `gold` (n_pairs,) and each layer's pair `cosines` (layer →
    (n_pairs,)), with a percentile bootstrap interval at `level` over `draws` resamplings
    of the pairs. Pairs without a gold score or with a NaN cosine in any layer are left
    out of every layer alike, so that the layers are scored on the same pairs."""
    if draws < 1:
        raise ValueError("task_scores needs at least one bootstrap draw")
    layers = sorted(cosines)
    stacked = np.vstack([np.asarray(cosines[layer], dtype=np.float64) for layer in layers])
    gold = np.asarray(gold, dtype=np.float64)
    if stacked.shape[1] != len(gold):
        raise ValueError(f"{stacked.shape[1]} cosines per layer for {len(gold)} gold scores")
    kept = np.isfinite(gold) & np.isfinite(stacked).all(axis=0)
    if kept.sum() < 3:
        raise ValueError(f"only {int(kept.sum())} scored pairs; a correlation needs 3")
    stacked, gold = stacked[:, kept], gold[kept]
    point = _spearman_rows(stacked, np.broadcast_to(gold, stacked.shape))
    resampled = np.empty((draws, len(layers)))
    for draw in range(draws):
        chosen = rng.integers(0, len(gold), len(gold))
        picked = stacked[:, chosen]
        resampled[draw] = _spearman_rows(picked, np.broadcast_to(gold[chosen], picked.shape))
    low, high = _finite_percentiles(resampled, level)
    table = pd.DataFrame(
        {
            "layer": layers,
            "spearman": point,
            "low": low,
            "high": high,
            "n_pairs": int(kept.sum()),
            "draws": draws,
            "level": level,
        }
    )
    return TaskScores(table, resampled)


def _finite_percentiles(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The central `level` percentile interval of `draws` over its first axis, the NaN
    draws left out: NaN, without numpy's all-NaN warning, where no draw is finite (a
    correlation undefined in every draw has no interval, and that is no cause to warn)."""
    draws = np.asarray(draws, dtype=np.float64)
    flat = draws.reshape(len(draws), -1)
    tail = (1.0 - level) / 2.0 * 100
    low, high = np.full(flat.shape[1], np.nan), np.full(flat.shape[1], np.nan)
    finite = np.isfinite(flat).any(axis=0)
    if finite.any():
        low[finite], high[finite] = np.nanpercentile(flat[:, finite], [tail, 100 - tail], axis=0)
    return low.reshape(draws.shape[1:]), high.reshape(draws.shape[1:])


def _orderings(n: int, rng: np.random.Generator) -> np.ndarray:
    """Every ordering of n items (n ≤ `EXACT_ORDERINGS_UP_TO`), else `SAMPLED_ORDERINGS`
    random ones: (k, n) positions."""
    if n <= EXACT_ORDERINGS_UP_TO:
        return np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    return np.array([rng.permutation(n) for _ in range(SAMPLED_ORDERINGS)], dtype=np.int64)


def layer_agreement(
    measure: np.ndarray,
    scores: TaskScores,
    rng: np.random.Generator,
    level: float = 0.95,
) -> dict[str, float]:
    """Spearman's ρ across layers between `measure` (n_layers,), in the order of
    ``scores.table``'s layers, and the task score: ``rho``, its interval over the score's
    bootstrap draws (``low``, ``high``), and the two-sided permutation ``p_value`` of
    |ρ| over orderings of the layers. NaN where fewer than 3 layers have the measure, or
    where the measure or the score is the same at every one of them (no ranking to agree
    with: ρ is undefined, and so is its p-value)."""
    measure = np.asarray(measure, dtype=np.float64)
    score = scores.table["spearman"].to_numpy()
    if len(measure) != len(score):
        raise ValueError(f"{len(measure)} measure values for {len(score)} layers")
    present = np.isfinite(measure)
    empty = {"rho": math.nan, "low": math.nan, "high": math.nan, "p_value": math.nan}
    if present.sum() < 3 or np.ptp(measure[present]) == 0 or np.ptp(score[present]) == 0:
        return empty | {"n_layers": int(present.sum())}
    values, score, draws = measure[present], score[present], scores.draws[:, present]
    rho = float(_spearman_rows(values[None], score[None])[0])
    per_draw = _spearman_rows(np.broadcast_to(values, draws.shape), draws)
    low, high = _finite_percentiles(per_draw, level)
    permuted = values[_orderings(len(values), rng)]
    null = _spearman_rows(permuted, np.broadcast_to(score, permuted.shape))
    p_value = float(np.mean(np.abs(null) >= abs(rho) - 1e-12))
    return {
        "rho": rho,
        "low": float(low),
        "high": float(high),
        "p_value": p_value,
        "n_layers": int(present.sum()),
    }


# The geometry measures set against the task score: (label, measure, column) of a
# measures table (results/tables/measures.tsv; `summary.measures_table`), each row's raw
# value but SelfSim's, adjusted for anisotropy as the paper reads it.
AGREEMENT_MEASURES = (
    ("anisotropy", "anisotropy", "raw"),
    ("adjusted SelfSim", "selfsim", "adjusted"),
    ("matrix entropy", "dataset_entropy", "raw"),
    ("prompt entropy", "prompt_entropy", "raw"),
    ("effective rank", "effective_rank", "raw"),
    ("α-ReQ", "alpha_req", "raw"),
    ("curvature", "curvature", "raw"),
    ("intrinsic dimension (GRIDE)", "intrinsic_dimension[gride]", "raw"),
)


def measures_by_layer(measures: pd.DataFrame, model: str) -> pd.DataFrame:
    """`model`'s `AGREEMENT_MEASURES` on its raw vectors (transform ``none``) from a
    measures table: a column per label the table holds a finite value of, indexed by
    layer."""
    rows = measures[(measures["model"] == model) & (measures["transform"] == "none")]
    columns = {}
    for label, measure, column in AGREEMENT_MEASURES:
        chosen = rows[rows["measure"] == measure].drop_duplicates("layer")
        values = chosen.set_index("layer")[column].astype(float)
        if np.isfinite(values).any():
            columns[label] = values
    return pd.DataFrame(columns)


def agreement_rows(
    by_layer: pd.DataFrame, scores: TaskScores, rng: np.random.Generator
) -> list[dict[str, float | str]]:
    """Each measure of `by_layer` (`measures_by_layer`) against the task `scores` of the
    same model (`layer_agreement`, a row per measure, ``measure`` its label); the layers
    without the measure left out."""
    layers = scores.table["layer"].to_numpy()
    return [
        {"measure": label}
        | layer_agreement(by_layer[label].reindex(layers).to_numpy(), scores, rng)
        for label in by_layer
    ]
