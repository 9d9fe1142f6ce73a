"""A layer's spectrum and its sentences' shape as summary rows (beyond the paper;
definitions in `contextuality.measures.spectra`).

Exact: ``dataset_entropy``, the matrix entropy of the sentences' mean occurrence vectors
(Skean et al.'s dataset entropy, on the indexed words' vectors of each sentence where they
pool every token of a prompt), and ``alpha_req``, the decay of the covariance eigenvalues
of every occurrence (the spread the isotropy scores share). Means over sentences with a
bootstrap interval: ``prompt_entropy``, each sentence's matrix entropy of its own
occurrences (two or more), and ``curvature``, of its occurrences in order (three or more).
A sentence here is its indexed words only, so both are of fewer rows than a prompt's tokens.
"""

from __future__ import annotations

import numpy as np

from contextuality.measures import spectra
from contextuality.measures.record import FigureRows, LayerInputs, Measure, SummaryRow
from contextuality.measures.summary import bootstrap_means, interval
from contextuality.rows import run_starts


def _shapes(layer: LayerInputs) -> spectra.SentenceShapes:
    """The layer's `spectra.SentenceShapes`, its sentences' words in position order,
    computed once for both records."""

    def compute() -> spectra.SentenceShapes:
        rows = layer.rows
        order = np.lexsort((rows.position, rows.sentence_id))
        vectors = rows.vectors if np.all(np.diff(order) > 0) else rows.vectors[order]
        return spectra.sentence_shapes(
            vectors, run_starts(rows.sentence_id[order]), layer.settings.curvature_zero_steps
        )

    return layer.shared("sentence_shapes", compute)


def spectrum(layer: LayerInputs) -> dict[str, SummaryRow]:
    """``dataset_entropy`` (of the sentences' mean vectors) and ``alpha_req`` (over the
    directions above storage rounding, `spectra.rounding_floor`)."""
    means = _shapes(layer).means
    eigenvalues = layer.spread().eigenvalues
    vectors = layer.rows.vectors
    mean_square = np.einsum("ij,ij->", vectors, vectors, dtype=np.float64) / vectors.size
    floor = spectra.rounding_floor(float(mean_square))
    return {
        "dataset_entropy": {"raw": spectra.dataset_entropy(means), "n": len(means)},
        "alpha_req": {
            "raw": spectra.alpha_req(eigenvalues, layer.settings.alpha_req_ranks, floor),
            "n": layer.n_valid,
        },
    }


def sentence_shapes(layer: LayerInputs) -> dict[str, SummaryRow]:
    """``prompt_entropy`` and ``curvature``: means over the sentences that have them."""
    shapes = _shapes(layer)
    values = {"prompt_entropy": shapes.entropies, "curvature": shapes.curvatures}
    settings = layer.settings
    found = {}
    for row, per_sentence in values.items():
        kept = per_sentence[np.isfinite(per_sentence)]
        draws = bootstrap_means(kept, settings.bootstrap_resamples, layer.generator(row))
        low, high = interval(draws if len(kept) else np.zeros(0), settings.confidence)
        found[row] = {
            "raw": float(kept.mean()) if len(kept) else float("nan"),
            "raw_low": low,
            "raw_high": high,
            "n": len(kept),
            "interval": "bootstrap",
        }
    return found


# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 6

MEASURES: tuple[Measure, ...] = (
    Measure(
        name="spectrum",
        rows=("dataset_entropy", "alpha_req"),
        caption=(
            "Matrix entropy (nats) of the sentences' mean occurrence vectors, centered and "
            "normalised (Skean et al. 2025), and α-ReQ, the power-law decay of the covariance "
            "eigenvalues over ranks 6 to 100 (measures.alpha_req_ranks)."
        ),
        compute=spectrum,
        optional=True,
        labels=("dataset entropy (nats)", "α-ReQ"),
        drawn_in=(
            FigureRows("matrix_entropy", ("dataset_entropy",)),
            FigureRows("alpha_req", ("alpha_req",)),
        ),
    ),
    Measure(
        name="sentence_shape",
        rows=("prompt_entropy", "curvature"),
        caption=(
            "Mean over sentences of the matrix entropy of a sentence's occurrences and of the "
            "curvature of their trajectory (mean angle in radians between consecutive steps)."
        ),
        interval="bootstrap",
        compute=sentence_shapes,
        optional=True,
        labels=("prompt entropy (nats)", "curvature (rad)"),
        drawn_in=(
            FigureRows("matrix_entropy", ("prompt_entropy",), place=1),
            FigureRows("curvature", ("curvature",)),
        ),
    ),
)
