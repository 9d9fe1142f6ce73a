"""Every measure of one layer from arrays. The rows and columns of the workflow's
measures.tsv for that layer, computed by the functions the measure step calls
(`measures.analysis.measure_layer`, `measures.summary.measures_table`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from contextuality.api.arguments import (
    as_matrix,
    layer_labels,
    one_sentence_warning,
    shown,
    vector_rows,
)
from contextuality.api.progress import Told
from contextuality.api.rows import IndexedRows, index_rows
from contextuality.corpus.index import IndexSettings
from contextuality.errors import ConfigError, warn
from contextuality.measures import analysis, summary
from contextuality.measures.settings import MeasureSettings
from contextuality.transforms.fitting import TransformSettings, fit_split
from contextuality.transforms.layers import fit_on, rows_fitted

log = logging.getLogger(__name__)


def corrected(
    vectors: np.ndarray,
    indexed: IndexedRows,
    transform: str,
    settings: TransformSettings,
) -> tuple[np.ndarray, pd.DataFrame, dict[str, Any]]:
    """`vectors` (in occurrence order) under correction `transform`, as the workflow
    measures one: fitted on a held-out share of the sentences (`fitting.fit_split`, the
    fit_split step's draw) and applied to the other sentences' occurrences, which are
    returned with their rows of the index and a record of the fit."""
    occurrences = indexed.occurrences
    if len(indexed.labels) < 2:
        raise ConfigError(
            f"transform: {transform!r} is fitted on some sentences and measured on the "
            f"others, and every row is in one sentence ({shown(indexed.labels[0])})"
        )
    split = fit_split(len(indexed.labels), settings.fit_fraction, settings.seed)
    in_fit = split[occurrences["sentence_id"].to_numpy()]
    fitted = fit_on(
        transform, vectors[rows_fitted(in_fit, occurrences, settings)], settings, vectors.dtype
    )
    measured = np.flatnonzero(~in_fit)
    record = {**fitted.describe(), "n_fit_sentences": int(split.sum()), "seed": settings.seed}
    return (
        fitted.apply_to_occurrences(vectors[measured]),
        occurrences.iloc[measured].reset_index(drop=True),
        record,
    )


def measure_layer(
    vectors: Any,
    words: Sequence[str],
    sentences: Sequence[Any],
    *,
    positions: Sequence[int] | None = None,
    transform: str = "none",
    settings: MeasureSettings | None = None,
    index: IndexSettings | None = None,
    fit: TransformSettings | None = None,
    sentence_copies: Mapping[Any, int] | None = None,
    past_first_word: bool = False,
    model: str = "arrays",
    layer: int = 0,
    n_layers: int | None = None,
    layer_output: str = "",
    progress: bool | None = None,
) -> pd.DataFrame:
    """Every measure of one layer: SelfSim, IntraSim, MEV, their anisotropy baselines and
    adjusted values, exact and as the paper estimated them, the isotropy scores and the
    other registered measures, each with its interval.

    vectors: (n, d) numpy array or torch tensor, row i the vector of word ``words[i]`` in
    sentence ``sentences[i]`` (any hashable label but None or NaN) at ``positions[i]`` (a
    whole number, 0 the sentence's first word; default: a sentence's rows in the order
    given); a row of NaN or zeros has no vector, and so has a row with an infinite element
    or a NaN among numbers, with a warning that counts them. A word is measured where it
    occurs in at least `index`'s ``min_contexts`` sentences (the schema's default without
    it). transform: ``none`` (the vectors as given) or the name of a correction's record
    (`fitting.CORRECTIONS`), fitted on a held-out share of the sentences (`fit`) and
    measured on the others.
    past_first_word: also the ``[position>0]`` measures. model, layer, n_layers (default:
    `layer`, at least 1) and layer_output label the rows. Returns the rows of measures.tsv
    for this layer (columns `summary.SUMMARY_COLUMNS`, one row per measure); what rests
    on too few words or sentences is a warning, as in the workflow.

    Cost: passes over the n × d rows for every measure, and ``bootstrap_resamples``
    resamples of their sentences for each interval. Its stages are logged (a line at the
    start stating the rows, the words measured and the resamples, one every 15 s, one at
    the end); progress: a tqdm bar (None: where stderr is a terminal or the call runs in a
    notebook).
    """
    settings = settings or MeasureSettings()
    layer, n_layers = layer_labels(layer, n_layers)
    matrix = as_matrix(vectors)
    has_vector = vector_rows(matrix)
    indexed = index_rows(words, sentences, positions, index, sentence_copies, len(matrix))
    where = f"{model} layer {layer} ({transform})"
    cost = (
        f"{len(matrix):,} rows × {matrix.shape[1]} dimensions, "
        f"{int(indexed.vocab['indexed'].sum()):,} words measured, "
        f"{settings.bootstrap_resamples} bootstrap resamples"
    )
    with Told(log, f"{where}: measures", cost, progress=progress) as told:
        layer_summary = _measured(
            matrix, has_vector, indexed, where, transform, settings, fit, past_first_word, told
        )
    layer_summary = {
        "model": model,
        "transform": transform,
        "layer": layer,
        "n_layers": n_layers,
        "layer_output": layer_output,
        **layer_summary,
    }
    warn([f"{where}: {line}" for line in analysis.thin_estimates(layer_summary)])
    return summary.measures_table([layer_summary]).reset_index(drop=True)


def _measured(
    matrix: np.ndarray,
    has_vector: np.ndarray,
    indexed: IndexedRows,
    where: str,
    transform: str,
    settings: MeasureSettings,
    fit: TransformSettings | None,
    past_first_word: bool,
    told: Told,
) -> dict[str, Any]:
    """The layer's summary (`analysis.measure_layer`) from its rows in occurrence order,
    under `transform`, its record of the fit first where there is one."""
    sentence_ids = indexed.occurrences["sentence_id"].to_numpy()
    one_sentence_warning(sentence_ids[has_vector[indexed.order]], indexed.labels, where)
    stored = str(matrix.dtype) if matrix.dtype == np.float16 else None
    rows = matrix[indexed.order].astype(np.float32 if stored else matrix.dtype, copy=False)
    occurrences = indexed.occurrences
    header: dict[str, Any] = {}
    if transform != "none":
        told.stage(f"fitting {transform}")
        fit = fit or TransformSettings(seed=settings.seed)
        rows, occurrences, header["transform_fit"] = corrected(rows, indexed, transform, fit)
        stored = None
    told.stage("measures")
    measured = analysis.measure_layer(
        rows,
        occurrences,
        indexed.vocab,
        settings,
        indexed.copies,
        overwrite=True,
        positions=past_first_word,
        stored_dtype=stored,
    )
    return {**header, **measured.summary}
