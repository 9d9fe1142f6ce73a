"""A layer's vectors as the measures read them: as stored, or corrected on held-out sentences.

Under transform ``none`` a layer is every occurrence's stored vector. Under a correction
(`transforms`), the correction is fitted on the occurrences of the held-out sentences of
a split (`transforms.fit_split`) and the other sentences' occurrences are measured,
corrected: the fitting sentences are never measured, so a correction cannot remove what it
was fitted on.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality.errors import InputDataError
from contextuality.measures.rows import rows_with_vectors
from contextuality.measures.transforms import TransformSettings, fit_transform
from contextuality.provenance import sha256_file
from contextuality.storage.shards import load_shards
from contextuality.tables import read_parquet_with_provenance

PathLike = str | os.PathLike


@dataclass(frozen=True)
class TransformFit:
    """How a transform other than ``none`` is fitted: on the sentences marked ``fit`` in
    the `split` table (the fit_split step's), with `settings` (config
    ``measures.transform_fit`` and the seed, as `transforms.TransformSettings` takes them)."""

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
    fitted on the split's held-out sentences (past each one's first word, with the
    setting ``fit_without_first_words``) and the other sentences' rows are read and
    corrected a slice at a time into float32 (NaN where no vector), so the raw layer is
    never held whole beside the corrected one.
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
    split, split_provenance = read_parquet_with_provenance(transform_fit.split)
    if split_provenance["corpus_checksum"] != index_summary["corpus_checksum"]:
        raise InputDataError(f"{transform_fit.split} was drawn for another corpus; rebuild it")
    in_fit = split["fit"].to_numpy()[occurrences["sentence_id"].to_numpy()]
    fitted_rows = in_fit
    if transform_fit.settings.get("fit_without_first_words"):
        fitted_rows = in_fit & (occurrences["position"].to_numpy() > 0)
    fitting, stored = load(dtype=None, rows=np.flatnonzero(fitted_rows))
    fitted = fit_transform(
        transform,
        fitting[rows_with_vectors(fitting)],
        TransformSettings(**transform_fit.settings),
        stored_as=stored.get("dtype", fitting.dtype),  # its rounding: whiten's null floor
    )
    del fitting
    measured = np.flatnonzero(~in_fit)
    correct = (fitted.apply_to_occurrences, fitted.matrix.shape[1])
    vectors, attributes = load(dtype="float32", rows=measured, convert=correct)
    record = {
        **fitted.describe(),
        "fit_fraction": split_provenance["fit_fraction"],
        "fit_without_first_words": bool(transform_fit.settings.get("fit_without_first_words")),
        "seed": split_provenance["seed"],
        "n_fit_sentences": split_provenance["n_fit_sentences"],
        "split_sha256": sha256_file(transform_fit.split),
    }
    return Layer(vectors, occurrences.iloc[measured].reset_index(drop=True), attributes, record)
