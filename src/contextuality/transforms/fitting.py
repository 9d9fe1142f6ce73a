"""The transforms: ``none`` (the vectors as stored) and the corrections of a space, each
fitted on a held-out part of the corpus and then applied.

The corrections are records (`record.Correction`) found in the modules of
`contextuality.transforms.corrections`, in the order their modules declare: adding one is
adding a module. Every correction is affine, x ↦ (x − mean) @ matrix
(`affine.FittedTransform`), with parameters estimated in float64.

A correction is fitted on the rows passed to :func:`fit_transform` and nothing else.
Callers pass a held-out part of the corpus (:func:`fit_split`) and measure the
other part: parameters estimated on the very vectors being measured let each vector fit
its own correction, which flatters whitening in particular (with few rows per dimension
the fitted covariance is the sample's own, and the sample then looks exactly isotropic);
fitting on held-out sentences avoids that.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from contextuality.catalogue.discovery import discover, record_named
from contextuality.configuration.random_streams import generator
from contextuality.configuration.schema import check_bounds, default
from contextuality.errors import ConfigError, NonFiniteValueError
from contextuality.rows import row_chunks, rows_with_vectors
from contextuality.transforms.affine import FittedTransform
from contextuality.transforms.record import Correction

CORRECTIONS: tuple[Correction, ...] = discover(
    "contextuality.transforms.corrections", "CORRECTIONS"
)
# What the vectors can be measured under: as stored, or under a correction.
TRANSFORMS = ("none", *(record.name for record in CORRECTIONS))
# The schema's section of the corrections' fitting (config ``measures.transform_fit``).
_FIT = ("measures", "transform_fit")


def correction(name: str) -> Correction:
    """The record of the correction called `name` (KeyError if none is)."""
    return record_named(CORRECTIONS, name)


def docs_table() -> str:
    """The docs' list of corrections (drawn into docs/degeneration.md when mkdocs builds): a
    row per record: what it is and does, and the settings of ``measures.transform_fit`` it
    reads."""
    lines = ["| transform | what it is | what it does | settings |", "|---|---|---|---|"]
    for record in CORRECTIONS:
        settings = ", ".join(f"`{'.'.join((*_FIT, name))}`" for name in record.settings)
        lines.append(
            f"| `{record.name}` | {record.label} | {record.caption} | {settings or 'none'} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class TransformSettings:
    """Settings of the corrections (config section measures.transform_fit, with measures.seed)."""

    # share of sentences held out to fit corrections (0 < f < 1)
    fit_fraction: float = default(*_FIT, "fit_fraction")
    # D for abtt; None: max(1, round(d / 100))
    abtt_directions: int | None = default(*_FIT, "abtt_directions")
    whiten_dimensions: int | None = default(*_FIT, "whiten_dimensions")  # k; None: all d
    rogue_dimensions: int = default(*_FIT, "rogue_dimensions")  # k for drop_rogue
    # fit on the held-out sentences' later words only
    fit_without_first_words: bool = default(*_FIT, "fit_without_first_words")
    seed: int = default("measures", "seed")

    def __post_init__(self) -> None:
        fitting = {item.name: getattr(self, item.name) for item in fields(self)}
        check_bounds(_FIT, {name: value for name, value in fitting.items() if name != "seed"})


def fit_transform(
    name: str, vectors: np.ndarray, settings: TransformSettings, stored_as: DTypeLike = None
) -> FittedTransform:
    """Fit the transform ``name`` on ``vectors`` (n, d), n ≥ 2 finite rows: the held-out
    fitting part, never the rows to be measured (see the module docstring). `stored_as`:
    the float dtype the vectors were stored in, whose rounding a correction may need
    (whiten's null floor; None: ``vectors.dtype``). ``none`` is the identity."""
    if name not in TRANSFORMS:
        raise ConfigError(f"transform must be one of {TRANSFORMS}, not {name!r}")
    vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array of rows, got shape {vectors.shape}")
    n, d = vectors.shape
    if n < 2:
        raise ConfigError(
            f"{name}: needs at least 2 fitting rows, got {n}; "
            "raise measures.transform_fit.fit_fraction"
        )
    if not all(np.isfinite(vectors[rows]).all() for rows in row_chunks(n, d)):
        raise NonFiniteValueError(f"{name}: the fitting vectors contain ±inf or NaN")
    if name == "none":
        return FittedTransform(name, np.zeros(d), np.eye(d), n)
    stored_as = np.dtype(vectors.dtype if stored_as is None else stored_as)
    mean, matrix, parameters = correction(name).fit(vectors, settings, stored_as)
    return FittedTransform(name, mean, matrix, n, parameters)


def fit_split_settings(fit_fraction: float, seed: int) -> dict[str, Any]:
    """What a split is drawn with (`fit_split`), whose hash its table records."""
    return {"fit_fraction": fit_fraction, "seed": seed}


def fit_split(n_sentences: int, fit_fraction: float, seed: int) -> np.ndarray:
    """Bool mask (n_sentences,), True for the sentences of the fitting part:
    round(fit_fraction · n_sentences) of them, at least 1 and at most n_sentences − 1,
    the first of a permutation drawn from the correction-split stream (`random_streams`)."""
    if n_sentences < 2:
        raise ValueError(f"splitting needs at least 2 sentences, got {n_sentences}")
    if not 0 < fit_fraction < 1:
        raise ValueError(f"fit_fraction must be in (0, 1), got {fit_fraction}")
    n_fit = min(max(round(fit_fraction * n_sentences), 1), n_sentences - 1)
    mask = np.zeros(n_sentences, dtype=bool)
    mask[generator(seed, "fit_split").permutation(n_sentences)[:n_fit]] = True
    return mask


def corrected_occurrences(
    vectors: np.ndarray,
    sentence_id: np.ndarray,
    fit_sentences: np.ndarray,
    name: str,
    settings: TransformSettings,
) -> tuple[np.ndarray, FittedTransform]:
    """A layer's occurrence vectors under correction `name`, fitted on the held-out part.

    vectors: (n, d) rows; sentence_id: (n,) each row's sentence; fit_sentences: bool mask
    by sentence_id (`fit_split`). Rows with a vector (finite, not all zero) in fitting
    sentences fit the correction; the other sentences' rows are corrected. Returns the
    corrected (n, k) float32 rows, NaN wherever a row is in the fitting part or has no
    vector (so the measures skip it), and the fitted correction.
    """
    has_vector = rows_with_vectors(vectors)
    in_fit = np.asarray(fit_sentences, dtype=bool)[sentence_id]
    fitted = fit_transform(name, vectors[has_vector & in_fit], settings)
    measured = np.flatnonzero(~in_fit)
    corrected = np.full((len(vectors), fitted.matrix.shape[1]), np.nan, dtype=np.float32)
    for rows in row_chunks(len(measured), vectors.shape[1]):  # no second copy of the measured rows
        corrected[measured[rows]] = fitted.apply_to_occurrences(vectors[measured[rows]])
    return corrected, fitted
