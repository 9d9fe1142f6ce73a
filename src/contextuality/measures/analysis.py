"""All measures of one (model, layer) shard: per-word, per-sentence and summary values.

The per-word and per-sentence tables are built from the layer's occurrences with a vector
(`contextuality.measures.occurrences`); the summary rows are the registry's measures
(`contextuality.measures.registry`), computed in turn from one `record.LayerInputs`.

Two families of estimators are reported side by side:

- exact, from the paper's definitions: SelfSim over pairs of occurrences in different
  sentences, IntraSim over every sentence, MEV as σ₁²/Σσ² (uncentered, and centered), the
  anisotropy baseline as the exact mean cosine of occurrences in different sentences, the
  MEV baseline as the MEV of a uniform sample of occurrences;
- the paper's (``[paper]``, ``[truncated_svd]``), what its published numbers computed:
  SelfSim over all pairs of a word's listed occurrences (repeated sentences kept), the
  TruncatedSVD variance ratio per word, and the anisotropy, IntraSim and TruncatedSVD
  baselines from 1,000 sentences drawn uniformly with one word each.

Adjusted value = raw − baseline (paper §4.1), each family with its own baseline. Every
summary value carries an interval: a percentile bootstrap over words or sentences for a raw
mean, and the spread of independent samples for a sampled estimate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.configuration.random_streams import generator
from contextuality.measures import equations, registry
from contextuality.measures.occurrences import (
    LayerRows,
    sentence_table,
    valid_rows,
    word_table,
)
from contextuality.measures.positions import position_profile
from contextuality.measures.record import LayerInputs, SummaryRow
from contextuality.measures.settings import MeasureSettings
from contextuality.measures.summary import Baseline
from contextuality.rows import run_starts


@dataclass
class LayerMeasures:
    """Per-word table, per-sentence table and the layer's summary values."""

    words: pd.DataFrame
    sentences: pd.DataFrame
    summary: dict[str, Any]
    positions: pd.DataFrame | None = None  # `positions.position_profile`


def _baselines(
    rows: LayerRows,
    sentence_starts: np.ndarray,
    intrasim: np.ndarray,
    cosine: float,
    settings: MeasureSettings,
) -> tuple[dict[str, Baseline], np.ndarray]:
    """Every baseline, by family, and the paper's sampled statistics.

    The paper's statistics come as an array (1 + sample_replicates, 3): their estimates on
    independent samples of sentences, one row each, in the order of
    `equations.PAPER_SAMPLE_ESTIMATES`; a sampled baseline is the mean of its estimates.
    """
    size, draws = settings.baseline_sample_size, settings.sample_replicates
    paper_rng = generator(settings.seed, "paper_sample")
    copies = rows.copies[sentence_starts]
    paper = np.array(
        [
            equations.paper_sample_estimates(
                rows.vectors, intrasim, sentence_starts, copies, size, paper_rng
            )
            for _ in range(draws + 1)
        ]
    )
    baselines = {
        "cosine": Baseline(cosine),
        "paper_cosine": Baseline.sampled(paper[:, 0]),
        "truncated_svd": Baseline.sampled(paper[:, 2]),
        **explained_variance_baselines(rows.vectors, settings),
    }
    return baselines, paper


# The baseline families that are the share of a random sample's variance along its first
# direction (`equations.explained_variance_baseline`), each by whether it centers the sample.
EXPLAINED_VARIANCE_FAMILIES = {"mev": False, "mev_centered": True}


def explained_variance_baselines(vectors: Any, settings: MeasureSettings) -> dict[str, Baseline]:
    """The baselines of `EXPLAINED_VARIANCE_FAMILIES`, by family, from a layer's occurrence
    vectors (`vectors`: indexed by occurrence id, its length the number of occurrences):
    each on the same ``baseline_sample_size`` occurrences, drawn ``sample_replicates``
    times more for its spread."""
    return {
        family: Baseline.sampled(
            equations.explained_variance_baseline(
                vectors,
                settings.baseline_sample_size,
                generator(settings.seed, "mev_baseline"),  # one sample for every family
                centered=centered,
                n_draws=settings.sample_replicates,
            )
        )
        for family, centered in EXPLAINED_VARIANCE_FAMILIES.items()
    }


def measure_rows(
    layer: LayerInputs, streamed: bool = False, positions: bool = False
) -> dict[str, SummaryRow]:
    """The summary rows of every measure the measure step computes (`registry.MEASURES`)
    from `layer`: a streamed layer's only those marked streamed, and those that need the
    position profile only with `positions`, last (they may drop rows in place); none that
    the settings leave out."""
    registry.check_left_out(layer.settings.leave_out)
    left_out = registry.left_out(layer.settings.leave_out)
    chosen = [
        record
        for record in registry.MEASURES
        if record.compute is not None
        and (record.streamed or not streamed)
        and (positions or not record.needs_positions)
        and record.name not in left_out
    ]
    results: dict[str, SummaryRow] = {}
    for record in sorted(chosen, key=lambda record: record.needs_positions):
        results.update(record.compute(layer))
    return results


def measure_layer(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: MeasureSettings,
    sentence_copies: np.ndarray | None = None,
    overwrite: bool = False,
    positions: bool = False,
    stored_dtype: str | None = None,
) -> LayerMeasures:
    """Compute every measure of one layer, exact and as the paper estimated it.

    vectors: (n_occurrences, d) rows aligned with ``occurrences``; NaN rows are missing.
    sentence_copies: times the corpus repeats each sentence (by sentence_id; default once).
    overwrite: drop the missing rows in place, overwriting `vectors`, rather than copy the
    others (the layer is then held once). With `positions`, also the position profile
    (`positions.position_profile`) and the ``[position>0]`` measures. The summary's
    ``measures`` maps a measure name to raw, baseline and adjusted values with their
    intervals (``*_low``, ``*_high``) and ``n``, the words, sentences or sampled
    occurrences behind it. stored_dtype: the shard's dtype, where `vectors` were widened
    from it: a word whose occurrences differ by less than it resolves has no variance.
    """
    if sentence_copies is None:
        sentence_copies = np.ones(int(occurrences["sentence_id"].to_numpy().max(initial=-1)) + 1)
    n_occurrences = len(vectors)
    rows = valid_rows(vectors, occurrences, sentence_copies, overwrite, stored_dtype)
    sentence_starts = run_starts(rows.sentence_id)
    intrasim, sentence_sums = equations.sentence_statistics(rows.vectors, sentence_starts)
    cosine = sentence_sums.expected_cosine()
    sentences = sentence_table(rows, sentence_starts, intrasim, cosine)
    baselines, paper = _baselines(rows, sentence_starts, intrasim, cosine, settings)
    words = word_table(rows, vocab)
    adjust_word_measures(words, baselines)
    layer = LayerInputs(
        settings=settings,
        words=words,
        sentences=sentences,
        baselines=baselines,
        sentence_sums=sentence_sums,
        n_valid=len(rows.vectors),
        rows=rows,
        paper=paper,
        paper_sample_size=min(
            settings.baseline_sample_size, int(rows.copies[sentence_starts].sum())
        ),
        vocab=vocab,
        overwrite=overwrite,
    )
    profile = None
    if positions:
        profile = position_profile(rows.vectors, rows.position, rows.sentence_id)
    results = measure_rows(layer, positions=positions)
    summary = {**summary_header(settings, n_occurrences, len(rows.vectors)), "measures": results}
    return LayerMeasures(words=words, sentences=sentences, summary=summary, positions=profile)


# Fewer words or sentences than this behind a mean, and its bootstrap interval is a
# statement about a handful of items: said out loud (`thin_estimates`).
MIN_MEAN_ITEMS = 20


def thin_estimates(summary: dict[str, Any]) -> list[str]:
    """What a layer summary's numbers rest on too little of, one line each: a mean over
    fewer than `MIN_MEAN_ITEMS` words or sentences, and a sampled estimate or baseline
    whose sample (``baseline_sample_size``) exceeds what the layer has, so that its
    samples overlap and its interval understates the spread. Each row's ``n`` gives the
    number it rests on."""
    size, lines = summary["baseline_sample_size"], []
    records = {row: record for record in registry.MEASURES for row in record.rows}
    few = {
        row: values["n"]
        for row, values in summary["measures"].items()
        if row in records
        and records[row].interval == "bootstrap"
        and 0 < values["n"] < MIN_MEAN_ITEMS
    }
    if few:
        listed = ", ".join(f"{row} ({n})" for row, n in few.items())
        lines.append(f"means over fewer than {MIN_MEAN_ITEMS} words or sentences: {listed}")
    short = {
        row: values["n"]
        for row, values in summary["measures"].items()
        if row in records and records[row].sampled and values["n"] < size
    }
    n_valid = summary["n_occurrences"] - summary["n_missing"]
    if n_valid < size:
        short["the MEV baselines"] = n_valid
    if short:
        listed = ", ".join(f"{row} ({n})" for row, n in short.items())
        lines.append(
            f"samples of baseline_sample_size = {size} drawn from fewer: {listed}; "
            "the samples overlap and their spread understates the interval"
        )
    return lines


def adjust_word_measures(words: pd.DataFrame, baselines: dict[str, Baseline]) -> None:
    """Add ``<column>_adjusted`` = raw − baseline beside each per-word column of the
    registry's word means that the table has, each by its own family's baseline."""
    for column, family in registry.word_columns().items():
        if column in words:
            words[f"{column}_adjusted"] = words[column] - baselines[family].value


def summary_header(settings: MeasureSettings, n_occurrences: int, n_valid: int) -> dict[str, Any]:
    """What a layer summary records of its rows and settings, before its ``measures``:
    every field of `settings`, as each may change a number."""
    return {
        "n_occurrences": n_occurrences,
        "n_missing": n_occurrences - n_valid,
        **dataclasses.asdict(settings),
    }


def context_specific_words(layer_words: dict[int, pd.DataFrame], top: int) -> pd.DataFrame:
    """The `top` most and least context-specific words of each layer, by adjusted SelfSim.

    Most context-specific = lowest SelfSim (occurrences least alike across contexts).
    Columns: layer, end (``most`` or ``least``), rank (1 = most extreme), word,
    word_class, count, selfsim, selfsim_adjusted.
    """
    columns = ["word", "word_class", "count", "selfsim", "selfsim_adjusted"]
    parts = []
    for layer, words in sorted(layer_words.items()):
        ordered = words.sort_values(["selfsim_adjusted", "word"], kind="stable")
        for end, chosen in (("most", ordered.head(top)), ("least", ordered.tail(top)[::-1])):
            part = chosen[columns].reset_index(drop=True)
            part.insert(0, "rank", np.arange(1, len(part) + 1))
            part.insert(0, "end", end)
            part.insert(0, "layer", layer)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)
