"""A layer's isotropy scores as summary rows (beyond the paper; definitions in
`contextuality.measures.isotropy`).

Exact for the layer's occurrences with a vector, from one centered scatter matrix that
every score shares: ``isoscore``, ``effective_rank``, ``partition_ratio`` (I(W) over the
eigenvectors of the uncentered Gram matrix and their negations). Sampled: ``isoscore*`` on
`isotropy_samples` samples of `baseline_sample_size` occurrences, each covariance shrunk
toward the covariance of all of them by `isoscore_shrinkage`; the samples' mean is the
value and their spread its interval. From the sums by sentence alone (so a streamed layer
has them too): ``rogue_share[k]``, the share of the expected cosine owed to the top
k = 1..3 dimensions, which ``dimensions`` names.
"""

from __future__ import annotations

import numpy as np

from contextuality.configuration.random_streams import generator
from contextuality.measures import isotropy
from contextuality.measures.record import LayerInputs, Measure, SummaryRow
from contextuality.measures.summary import sampled_summary
from contextuality.rows import row_chunks

ROGUE_DIMENSIONS = 3


def log_partition_both_signs(vectors: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """log Z(c) and log Z(−c) (2, k) for the columns c of `directions` (d, k) over rows
    (n, d): projections and their exponentials in float32 chunks, shifted by the chunk's
    maximum so that large norms do not overflow, summed in float64; chunks combined with
    logaddexp."""
    log_z = np.full((2, directions.shape[1]), -np.inf)
    basis = directions.astype(np.float32)
    for chunk in row_chunks(*vectors.shape):
        projections = np.asarray(vectors[chunk], dtype=np.float32) @ basis
        for sign, signed in enumerate((projections, -projections)):
            top = signed.max(axis=0)
            sums = np.exp(signed - top).sum(axis=0, dtype=np.float64)
            log_z[sign] = np.logaddexp(log_z[sign], top + np.log(sums))
    return log_z


def exact_scores(layer: LayerInputs) -> dict[str, SummaryRow]:
    """``isoscore``, ``effective_rank`` and ``partition_ratio`` of the layer's rows."""
    layer_spread, n = layer.spread(), layer.n_valid
    roots = np.sqrt(layer_spread.eigenvalues)
    shares = roots[roots > 0] / roots.sum()
    log_z = log_partition_both_signs(layer.rows.vectors, layer_spread.gram_directions)
    return {
        "isoscore": {"raw": isotropy.isoscore_from_eigenvalues(layer_spread.eigenvalues), "n": n},
        "effective_rank": {"raw": float(np.exp(-np.sum(shares * np.log(shares)))), "n": n},
        "partition_ratio": {"raw": float(np.exp(log_z.min() - log_z.max())), "n": n},
    }


def isoscore_star(layer: LayerInputs) -> dict[str, SummaryRow]:
    """``isoscore*`` on seeded samples (stream ``isotropy_samples``)."""
    settings, vectors, n = layer.settings, layer.rows.vectors, layer.n_valid
    covariance = layer.spread().covariance
    rng = generator(settings.seed, "isotropy_samples")
    size = min(settings.baseline_sample_size, n)
    draws = np.array(
        [
            isotropy.isoscore_star(
                vectors[np.sort(rng.choice(n, size=size, replace=False))],
                settings.isoscore_shrinkage,
                covariance,
            )
            for _ in range(settings.isotropy_samples)
        ]
    )
    return {"isoscore*": sampled_summary(draws, size, settings.confidence)}


def rogue_shares(layer: LayerInputs) -> dict[str, SummaryRow]:
    """``rogue_share[k]``, k = 1..3, from the sums by sentence; none without a pair of
    occurrences in different sentences."""
    sums = layer.sentence_sums
    if float(sums.n) ** 2 <= sums.same_sentence_pairs:
        return {}
    rogue = isotropy.rogue_dimensions_of(sums, top=ROGUE_DIMENSIONS)
    return {
        f"rogue_share[{k}]": {
            "raw": rogue.share(k),
            "n": sums.n,
            "dimensions": ",".join(str(dimension) for dimension in rogue.dimensions[:k]),
        }
        for k in range(1, ROGUE_DIMENSIONS + 1)
    }


# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 4

MEASURES: tuple[Measure, ...] = (
    Measure(
        name="isotropy",
        rows=("isoscore", "effective_rank", "partition_ratio"),
        caption=(
            "IsoScore, the effective rank of the centered occurrences, and the partition-function "
            "ratio I(W), exactly."
        ),
        compute=exact_scores,
        labels=("IsoScore", "effective rank", "partition ratio I(W)"),
    ),
    Measure(
        name="isoscore*",
        rows=("isoscore*",),
        caption=(
            "IsoScore* on seeded samples of occurrences, each covariance shrunk toward the layer's."
        ),
        interval="sample spread",
        compute=isoscore_star,
        labels=("IsoScore*",),
    ),
    Measure(
        name="rogue_share",
        rows=tuple(f"rogue_share[{k}]" for k in range(1, ROGUE_DIMENSIONS + 1)),
        caption=(
            "Share of the exact anisotropy baseline owed to the top k dimensions (named in "
            "`dimensions`)."
        ),
        streamed=True,
        compute=rogue_shares,
        labels=tuple(
            f"share of anisotropy in the top {k} dimensions" for k in range(1, ROGUE_DIMENSIONS + 1)
        ),
    ),
)
