"""A model's token embedding matrices measured. After Gao et al. (ICLR 2019, "Representation
Degeneration"): how anisotropic the rows of the input (and output) embedding are, and how a
row's norm follows its token's frequency in a corpus.

Layer 0 of the workflow is the embedding *output* for the corpus' occurrences; this module
reads the matrix W (V, d), one row per vocabulary entry, seen in the corpus or not:

- singular spectrum: σ_i² / Σ_j σ_j², the singular values of W (or of W − 1w̄ᵀ, centered
  on the mean row w̄) as shares of the squared total, largest first;
- anisotropy: the exact mean cosine between distinct rows from the sum of the unit rows û_i,
  (‖Σ_i û_i‖² − V) / (V(V − 1)), no pair formed;
- the cone: each row's cosine to the mean row w̄, cos(w_i, w̄) = w_iᵀw̄ / (‖w_i‖‖w̄‖);
- the layers' isotropy scores on every row (`isotropy.isoscore`, `isotropy.partition_ratio`,
  `isotropy.effective_rank`, `spectra.matrix_entropy` of `spectra.normalized_rows`): each
  costs O(V·d²), so no sample is drawn;
- norm against frequency: Spearman's ρ of ‖w_i‖ against the token's count over the tokens
  seen (count > 0), and the mean norm and cone cosine by frequency-rank bin.

Units: cosines, shares, IsoScore and I(W) are unitless (IsoScore and I(W) 0 to 1, 1 being
isotropic); effective rank is in dimensions (1 to d); matrix entropy in nats; norms in the
weights' own units. A zero row has no direction: it is left out of the cosines (V then
counts the nonzero rows). All arithmetic is in float64. Bad input raises ValueError naming
the function.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from contextuality.measures.isotropy import effective_rank, isoscore, partition_ratio
from contextuality.measures.ranks import spearman_correlation
from contextuality.measures.spectra import matrix_entropy, normalized_rows

MATRICES = ("input", "output")
# What the table's `layer` column says: the matrix, kept apart from layer 0 (its output).
LAYER = "embedding matrix"
# Upper ends of the frequency-rank bins 1–100, 101–1,000, 1,001–10,000 (then the rest).
FREQUENCY_RANK_EDGES = (100, 1_000, 10_000)
UNSEEN = "unseen"
ROW_COLUMNS = (
    "model",
    "layer",
    "matrix",
    "tied",
    "frequency_corpus",
    "n_rows",
    "dimensions",
    "n_seen",
    "anisotropy",
    "anisotropy_seen",
    "cone_cosine",
    "cone_cosine_seen",
    "top_singular_share",
    "top_singular_share_centered",
    "isoscore",
    "partition_ratio",
    "effective_rank",
    "matrix_entropy",
    "mean_norm",
    "norm_frequency_spearman",
)
BIN_COLUMNS = ("bin", "rank_low", "rank_high", "n_tokens", "mean_count", "mean_norm", "cone_cosine")
NORM_COLUMNS = ("model", "matrix", "frequency_corpus", *BIN_COLUMNS)
# The singular-value shares kept of each matrix, uncentered and centered: the first 100.
SPECTRUM_RANKS = 100
SPECTRUM_COLUMNS = ("model", "matrix", "centered", "rank", "share")


@dataclass(frozen=True)
class EmbeddingMatrix:
    """One token embedding matrix of a model: `weights` (V, d), which `matrix` it is
    ("input" or "output"), and `tied`: True where the output embedding is the same tensor
    as the input, False where it is another, None where the model has no output embedding
    (an encoder shipped without its language-modelling head)."""

    model: str
    matrix: str
    weights: np.ndarray
    tied: bool | None

    def __post_init__(self) -> None:
        if self.matrix not in MATRICES:
            raise ValueError(
                f"EmbeddingMatrix: matrix must be one of {MATRICES}, not {self.matrix!r}"
            )


def checked_weights(weights: np.ndarray, name: str) -> np.ndarray:
    """`weights` as float64 (V, d), V ≥ 2 rows, every entry finite (no copy if it is so)."""
    rows = np.asarray(weights, dtype=np.float64)
    if rows.ndim != 2 or len(rows) < 2 or rows.shape[1] < 1:
        raise ValueError(f"{name}: weights must be (V, d) with at least 2 rows, got {rows.shape}")
    if not np.isfinite(rows).all():
        raise ValueError(f"{name}: every weight must be finite")
    return rows


def checked_counts(counts: np.ndarray, n_rows: int, name: str) -> np.ndarray:
    """`counts` as float64 (V,), one finite non-negative count per row of the matrix."""
    values = np.asarray(counts, dtype=np.float64)
    if values.shape != (n_rows,):
        raise ValueError(f"{name}: counts must be ({n_rows},), one per row, got {values.shape}")
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError(f"{name}: counts must be finite and non-negative")
    return values


def singular_spectrum(weights: np.ndarray, centered: bool) -> np.ndarray:
    """σ_i² / Σ_j σ_j² (min(V, d),), largest first: the singular values of W (V, d), or of
    W − 1w̄ᵀ when `centered`, as shares of the squared total (the variance each principal
    direction holds). From the eigenvalues of the d × d Gram matrix (V × V if V < d);
    rounding below 0 clipped. Refuses a matrix of zeros (centered: of equal rows)."""
    rows = checked_weights(weights, "singular_spectrum")
    if centered:
        rows = rows - rows.mean(axis=0)
    gram = rows.T @ rows if len(rows) >= rows.shape[1] else rows @ rows.T
    squares = np.clip(np.linalg.eigvalsh(gram)[::-1], 0.0, None)
    if squares.sum() == 0:
        raise ValueError("singular_spectrum: the matrix has no nonzero singular value")
    return squares / squares.sum()


def _nonzero_unit_rows(rows: np.ndarray) -> np.ndarray:
    """The nonzero rows of float64 `rows`, scaled to norm 1."""
    norms = np.linalg.norm(rows, axis=1)
    kept = norms > 0
    return rows[kept] / norms[kept, None]


def mean_pairwise_cosine(weights: np.ndarray) -> float:
    """The mean cosine over the V(V − 1) ordered pairs of distinct nonzero rows of W (V, d):
    (‖Σ_i û_i‖² − V) / (V(V − 1)), û_i = w_i / ‖w_i‖, in O(V·d); 0 for orthogonal rows, 1
    for rows along one direction. Refuses fewer than 2 nonzero rows."""
    unit = _nonzero_unit_rows(checked_weights(weights, "mean_pairwise_cosine"))
    n = len(unit)
    if n < 2:
        raise ValueError(f"mean_pairwise_cosine: needs at least 2 nonzero rows, got {n}")
    total = unit.sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def mean_direction_cosines(weights: np.ndarray) -> np.ndarray:
    """cos(w_i, w̄) (V,) of each row of W (V, d) to the mean row w̄ (the cone's axis); NaN for
    a zero row, and for every row where the mean is zero."""
    rows = checked_weights(weights, "mean_direction_cosines")
    mean = rows.mean(axis=0)
    scale = np.linalg.norm(rows, axis=1) * np.linalg.norm(mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scale > 0, rows @ mean / scale, np.nan)


def norm_frequency_correlation(weights: np.ndarray, counts: np.ndarray) -> float:
    """Spearman's ρ (`ranks.spearman_correlation`, scipy.stats.spearmanr) of the row norm
    ‖w_i‖ against the count of token i, over the tokens seen (count > 0); NaN below 3 of
    them or where either side is constant. Negative: frequent tokens have short rows."""
    rows = checked_weights(weights, "norm_frequency_correlation")
    values = checked_counts(counts, len(rows), "norm_frequency_correlation")
    seen = values > 0
    return spearman_correlation(np.linalg.norm(rows[seen], axis=1), values[seen])


def frequency_ranks(counts: np.ndarray) -> np.ndarray:
    """Each token's frequency rank (V,) int64: 1 + the number of tokens counted more often
    (tied counts share the best rank, so no order among them is chosen); 0 where unseen."""
    values = checked_counts(counts, np.size(counts), "frequency_ranks")
    ascending = np.sort(values)
    more_often = len(values) - np.searchsorted(ascending, values, side="right")
    return np.where(values > 0, 1 + more_often, 0).astype(np.int64)


def _bin_label(low: int, high: int | None) -> str:
    """``"101–1,000"`` for ranks low..high, ``"10,001+"`` for an open last bin."""
    return f"{low:,}+" if high is None else f"{low:,}–{high:,}"


def frequency_bins(
    counts: np.ndarray, edges: tuple[int, ...] = FREQUENCY_RANK_EDGES
) -> list[tuple[str, int | None, int | None, np.ndarray]]:
    """(label, lowest rank, highest rank or None, row mask (V,)) of each frequency-rank bin:
    ranks 1..edges[0], edges[0] + 1..edges[1], …, the rest (high None), then the unseen
    tokens (both ranks None). Empty bins are left out."""
    ranks = frequency_ranks(counts)
    bins = []
    for low, high in zip([1, *(edge + 1 for edge in edges)], [*edges, None], strict=True):
        mask = (ranks >= low) & (ranks <= (np.inf if high is None else high))
        bins.append((_bin_label(low, high), low, high, mask))
    bins.append((UNSEEN, None, None, ranks == 0))
    return [(label, low, high, mask) for label, low, high, mask in bins if mask.any()]


def _mean_of_finite(values: np.ndarray) -> float:
    """The mean of the finite values (NaN where there are none)."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def norms_by_frequency(
    weights: np.ndarray, counts: np.ndarray, edges: tuple[int, ...] = FREQUENCY_RANK_EDGES
) -> pd.DataFrame:
    """A row per non-empty `frequency_bins` bin (`BIN_COLUMNS`): its ranks, tokens, mean
    count, mean row norm ‖w_i‖ (the weights' units) and mean cone cosine cos(w_i, w̄)."""
    rows = checked_weights(weights, "norms_by_frequency")
    values = checked_counts(counts, len(rows), "norms_by_frequency")
    norms = np.linalg.norm(rows, axis=1)
    cones = mean_direction_cosines(rows)
    bins = [
        (
            label,
            low,
            high,
            int(mask.sum()),
            values[mask].mean(),
            norms[mask].mean(),
            _mean_of_finite(cones[mask]),
        )
        for label, low, high, mask in frequency_bins(values, edges)
    ]
    table = pd.DataFrame(bins, columns=list(BIN_COLUMNS))
    return table.astype({"rank_low": "Int64", "rank_high": "Int64"})


def count_free_measures(weights: np.ndarray) -> dict[str, int | float]:
    """The measures of W (V, d) that no corpus changes: anisotropy and mean cone cosine over
    every row, the top singular share uncentered and centered, IsoScore, I(W), effective
    rank, matrix entropy (nats) and the mean row norm."""
    rows = checked_weights(weights, "count_free_measures")
    return {
        "n_rows": len(rows),
        "dimensions": rows.shape[1],
        "anisotropy": mean_pairwise_cosine(rows),
        "cone_cosine": _mean_of_finite(mean_direction_cosines(rows)),
        "top_singular_share": float(singular_spectrum(rows, centered=False)[0]),
        "top_singular_share_centered": float(singular_spectrum(rows, centered=True)[0]),
        "isoscore": isoscore(rows),
        "partition_ratio": partition_ratio(rows),
        "effective_rank": effective_rank(rows),
        "matrix_entropy": matrix_entropy(normalized_rows(rows)),
        "mean_norm": float(np.linalg.norm(rows, axis=1).mean()),
    }


def frequency_measures(weights: np.ndarray, counts: np.ndarray) -> dict[str, int | float]:
    """The measures of W (V, d) over the tokens a corpus has (counts (V,) > 0): how many,
    their anisotropy (NaN below 2 nonzero rows), their mean cosine to the mean of *every*
    row, and Spearman's ρ of norm against count."""
    rows = checked_weights(weights, "frequency_measures")
    seen = checked_counts(counts, len(rows), "frequency_measures") > 0
    enough = np.count_nonzero(np.linalg.norm(rows[seen], axis=1)) >= 2
    return {
        "n_seen": int(seen.sum()),
        "anisotropy_seen": mean_pairwise_cosine(rows[seen]) if enough else np.nan,
        "cone_cosine_seen": _mean_of_finite(mean_direction_cosines(rows)[seen]),
        "norm_frequency_spearman": norm_frequency_correlation(rows, counts),
    }


def matrix_rows(matrix: EmbeddingMatrix, counts: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The table's rows (`ROW_COLUMNS`) of one matrix: one per frequency corpus in `counts`
    (name → token counts (V,)), the count-free measures computed once and repeated;
    `layer` is `LAYER`."""
    if not counts:
        raise ValueError("matrix_rows: needs the token counts of at least one corpus")
    rows = checked_weights(matrix.weights, "matrix_rows")
    for corpus_counts in counts.values():  # refused before the long computations
        checked_counts(corpus_counts, len(rows), "matrix_rows")
    fixed = count_free_measures(rows)
    table = pd.DataFrame(
        [
            {
                "model": matrix.model,
                "layer": LAYER,
                "matrix": matrix.matrix,
                "tied": matrix.tied,
                "frequency_corpus": corpus,
                **fixed,
                **frequency_measures(rows, corpus_counts),
            }
            for corpus, corpus_counts in counts.items()
        ],
        columns=list(ROW_COLUMNS),
    )
    return table.astype({"tied": "boolean"})


def spectrum_rows(matrix: EmbeddingMatrix, ranks: int = SPECTRUM_RANKS) -> pd.DataFrame:
    """The first `ranks` shares σ_i²/Σσ² of `matrix` (`singular_spectrum`), uncentered
    then centered: a row (`SPECTRUM_COLUMNS`) per share, rank 1 the largest."""
    frames = []
    for centered in (False, True):
        shares = singular_spectrum(matrix.weights, centered)[:ranks]
        columns = {"model": matrix.model, "matrix": matrix.matrix, "centered": centered}
        columns |= {"rank": np.arange(1, len(shares) + 1), "share": shares}
        frames.append(pd.DataFrame(columns))
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class MatrixTables:
    """The tables of a model's token embedding matrices: `measures` (`ROW_COLUMNS`: a row
    per matrix and frequency corpus), `norms` (`NORM_COLUMNS`: per frequency-rank bin) and
    `spectra` (`SPECTRUM_COLUMNS`)."""

    measures: pd.DataFrame
    norms: pd.DataFrame
    spectra: pd.DataFrame


def measure_matrices(
    model: str,
    inputs: np.ndarray,
    outputs: np.ndarray | None,
    tied: bool | None,
    counts: Mapping[str, np.ndarray],
) -> MatrixTables:
    """Every table (`MatrixTables`) of model `model`'s input embedding `inputs` (V, d) and,
    where not None, of its own output embedding `outputs` (V, d), both in float64; `tied`
    as `EmbeddingMatrix` has it; `counts` each frequency corpus's token counts (V,)."""
    matrices = [EmbeddingMatrix(model, "input", inputs.astype(np.float64), tied)]
    if outputs is not None:
        matrices.append(EmbeddingMatrix(model, "output", outputs.astype(np.float64), tied))
    rows, norms, spectra = [], [], []
    for matrix in matrices:
        rows.append(matrix_rows(matrix, counts))
        spectra.append(spectrum_rows(matrix))
        for corpus, corpus_counts in counts.items():
            table = norms_by_frequency(matrix.weights, corpus_counts)
            labels = {"model": model, "matrix": matrix.matrix, "frequency_corpus": corpus}
            norms.append(pd.DataFrame(labels, index=table.index).join(table))
    return MatrixTables(
        *(pd.concat(frames, ignore_index=True) for frames in (rows, norms, spectra))
    )
