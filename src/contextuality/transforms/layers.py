"""A layer's vectors as the measures read them: as stored, or corrected on held-out sentences.

Under transform ``none`` a layer is every occurrence's stored vector. Under a correction
(`fitting`), the correction is fitted on the occurrences of the held-out sentences of
a split (`fitting.fit_split`) and the other sentences' occurrences are measured,
corrected: the fitting sentences are never measured, so a correction cannot remove what it
was fitted on.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality.errors import InputDataError
from contextuality.files.provenance import sha256_file
from contextuality.files.tables import read_parquet_with_provenance
from contextuality.rows import rows_with_vectors
from contextuality.storage.shards import load_shards
from contextuality.transforms.affine import FittedTransform
from contextuality.transforms.fitting import TransformSettings, fit_transform

PathLike = str | os.PathLike


@dataclass(frozen=True)
class TransformFit:
    """How a transform other than ``none`` is fitted: on the sentences marked ``fit`` in
    the `split` table (the fit_split step's), with `settings` (config
    ``measures.transform_fit`` and the seed, as `fitting.TransformSettings` takes them)."""

    split: Path
    settings: dict[str, Any]

    @classmethod
    def of(cls, split: PathLike | None, settings: dict[str, Any]) -> TransformFit | None:
        """The correction fitted on `split` with `settings`; None without a split (the
        transform ``none``)."""
        return None if split is None else cls(Path(split), dict(settings))


@dataclass
class Layer:
    """A layer as measured: vectors (n, d) aligned with `occurrences`, the shard's
    attributes, and a record of the correction's fit (None under ``none``)."""

    vectors: np.ndarray
    occurrences: pd.DataFrame
    attributes: dict[str, Any]
    transform_fit: dict[str, Any] | None = None


@dataclass(frozen=True)
class LayerCorrection:
    """A layer's correction, fitted on a split's held-out sentences: `fitted` applies it, `in_fit`
    (n_occurrences,) marks the occurrences of the fitting sentences (never measured), and
    `record` is what an output records of the fit."""

    fitted: FittedTransform
    in_fit: np.ndarray
    record: dict[str, Any]

    def read(self, load: Callable[..., tuple[np.ndarray, dict]], rows: np.ndarray):
        """`rows` (none of them in `in_fit`) read by `load` (`storage.shards.load_shards`
        bound to a layer's shards) and corrected a slice at a time into float32 (NaN where
        no vector), so the raw rows are never held whole beside the corrected ones."""
        convert = (self.fitted.apply_to_occurrences, self.fitted.matrix.shape[1])
        return load(dtype="float32", rows=rows, convert=convert)


def fitting_occurrences(
    transform_fit: TransformFit, occurrences: pd.DataFrame, index_summary: dict[str, Any]
) -> tuple[np.ndarray, dict[str, Any]]:
    """Which `occurrences` are in the split's fitting sentences (bool, n_occurrences), and
    the split's provenance; a split drawn for another corpus is refused."""
    split, split_provenance = read_parquet_with_provenance(transform_fit.split)
    if split_provenance["corpus_checksum"] != index_summary["corpus_checksum"]:
        raise InputDataError(f"{transform_fit.split} was drawn for another corpus; rebuild it")
    return split["fit"].to_numpy()[occurrences["sentence_id"].to_numpy()], split_provenance


def rows_fitted(
    in_fit: np.ndarray, occurrences: pd.DataFrame, settings: TransformSettings
) -> np.ndarray:
    """The occurrences a correction is fitted on: those of the fitting sentences (bool
    `in_fit`), past each sentence's first word with ``fit_without_first_words``."""
    if settings.fit_without_first_words:
        in_fit = in_fit & (occurrences["position"].to_numpy() > 0)
    return np.flatnonzero(in_fit)


def fit_on(
    transform: str, fitting: np.ndarray, settings: TransformSettings, stored_as: Any
) -> FittedTransform:
    """Correction `transform` fitted on the `fitting` rows that have a vector, stored as
    `stored_as` (`fitting.fit_transform`)."""
    return fit_transform(transform, fitting[rows_with_vectors(fitting)], settings, stored_as)


def fit_correction(
    load: Callable[..., tuple[np.ndarray, dict]],
    transform: str,
    transform_fit: TransformFit,
    occurrences: pd.DataFrame,
    index_summary: dict[str, Any],
) -> LayerCorrection:
    """Correction `transform` of one layer (read by `load`, `storage.shards.load_shards`
    bound to its shards) fitted on the split's held-out sentences (past each one's first
    word, with the setting ``fit_without_first_words``): the measure, static and geometry
    steps fit the same correction of a layer from the same rows."""
    in_fit, split_provenance = fitting_occurrences(transform_fit, occurrences, index_summary)
    settings = TransformSettings(**transform_fit.settings)
    fitting, stored = load(dtype=None, rows=rows_fitted(in_fit, occurrences, settings))
    # The stored dtype's rounding sets whiten's null floor.
    fitted = fit_on(transform, fitting, settings, stored.get("dtype", fitting.dtype))
    record = {
        **fitted.describe(),
        "fit_fraction": split_provenance["fit_fraction"],
        "fit_without_first_words": bool(transform_fit.settings.get("fit_without_first_words")),
        "seed": split_provenance["seed"],
        "n_fit_sentences": split_provenance["n_fit_sentences"],
        "split_sha256": sha256_file(transform_fit.split),
    }
    return LayerCorrection(fitted, in_fit, record)


def load_layer(
    shards: PathLike | Sequence[PathLike],
    index_summary: dict[str, Any],
    occurrences: pd.DataFrame,
    transform: str = "none",
    transform_fit: TransformFit | None = None,
    expected: dict[str, Any] | None = None,
    dtype: str | None = None,
) -> Layer:
    """A layer's vectors under `transform`, read from its shard or its parts' shards
    (`storage.shards.load_shards`, checked against the index and the `expected`
    attributes).

    ``none``: every occurrence, as `dtype` (None: as stored). Otherwise the correction is
    fitted on the split's held-out sentences (`fit_correction`) and the other sentences'
    rows are read corrected (`LayerCorrection.read`).
    """
    load = functools.partial(
        load_shards,
        shards,
        index_summary["index_checksum"],
        n_rows=len(occurrences),
        expected=expected,
    )
    if transform == "none":
        vectors, attributes = load(dtype=dtype)
        return Layer(vectors, occurrences, attributes)
    if transform_fit is None:
        raise ValueError(
            f"transform '{transform}' needs the fit split and the transform_fit settings"
        )
    correction = fit_correction(load, transform, transform_fit, occurrences, index_summary)
    measured = np.flatnonzero(~correction.in_fit)
    vectors, attributes = correction.read(load, measured)
    occurrences = occurrences.iloc[measured].reset_index(drop=True)
    return Layer(vectors, occurrences, attributes, correction.record)
