"""The steps of workflow/rules/measures.smk: every measure of one layer, and the tables that
gather the layers (measures, context-specific words, degeneration)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from contextuality.backends.base import layer_output
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.index import IndexFiles
from contextuality.errors import ConfigError, warn
from contextuality.files.provenance import config_hash, provenance_record, write_json
from contextuality.files.tables import (
    gather_parquet,
    read_parquet_with_provenance,
    write_parquet,
    write_tsv,
)
from contextuality.measures import analysis, degeneration, registry, summary
from contextuality.measures.settings import MeasureSettings
from contextuality.storage.shards import expected_extraction
from contextuality.transforms.layers import TransformFit, load_layer

PathLike = str | os.PathLike

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class MeasureOutputs:
    """Where a measure job writes one layer's measures: the per-word table, the
    per-sentence table and the JSON summary."""

    words: PathLike
    sentences: PathLike
    summary: PathLike

    def write(self, measured: analysis.LayerMeasures, provenance: dict[str, Any]) -> dict:
        """Write the tables with `provenance`, and the summary after it; return the summary.
        What the numbers rest on too little of is a WARNING on the console
        (`analysis.thin_estimates`)."""
        write_parquet(measured.words, self.words, provenance)
        write_parquet(measured.sentences, self.sentences, provenance)
        layer_summary = {**provenance, **measured.summary}
        write_json(self.summary, layer_summary)
        where = f"{provenance['model']} layer {provenance['layer']} ({provenance['transform']})"
        warn([f"{where}: {line}" for line in analysis.thin_estimates(layer_summary)])
        return layer_summary


@dataclasses.dataclass(frozen=True)
class DegenerationOutputs:
    """Where a measure job writes its layer's degeneration analysis and position profile,
    and the analysis's settings (config section ``degeneration``, the seed the measures')."""

    settings: degeneration.DegenerationSettings
    words: PathLike
    bins: PathLike
    cone: PathLike
    positions: PathLike


def _write_degeneration(
    layer: Any, vocab: pd.DataFrame, outputs: DegenerationOutputs, provenance: dict
) -> dict[str, dict[str, float]]:
    """The degeneration analysis of `layer` (`layers.Layer`), written; returns its frequency
    correlations as summary measures."""
    settings = outputs.settings
    found = degeneration.layer_degeneration(layer.vectors, layer.occurrences, vocab, settings)
    labels = {key: provenance[key] for key in ("model", "transform", "layer")}
    provenance = {**provenance, "degeneration": dataclasses.asdict(settings)}
    write_parquet(found.words.assign(**labels), outputs.words, provenance)
    write_parquet(found.bins.assign(**labels), outputs.bins, provenance)
    write_parquet(found.cone.assign(**labels), outputs.cone, provenance)
    return {
        name: {"raw": value, "n": len(found.words)}
        for name, value in degeneration.frequency_correlations(found.words).items()
    }


def _layer_provenance(
    attributes: dict[str, Any], transform: str, settings: MeasureSettings, **fields: Any
) -> dict[str, Any]:
    """What a layer's measures record: the model, layer and index of the shard or state
    file measured (its `attributes`), the transform and the settings' hash."""
    layer, n_layers = int(attributes["layer"]), int(attributes["n_layers"])
    return provenance_record(
        step="measures",
        **{key: attributes[key] for key in ("model", "model_id", "model_revision")},
        layer=layer,
        n_layers=n_layers,
        layer_output=layer_output(layer, n_layers, attributes["layer_conventions"]),
        pooling=attributes["pooling"],
        transform=transform,
        corpus_checksum=attributes["corpus_checksum"],
        index_checksum=attributes["index_checksum"],
        shard_config_hash=attributes["config_hash"],
        config_hash=config_hash(dataclasses.asdict(settings)),
        **fields,
    )


def measure_layer(
    shards: PathLike | Sequence[PathLike],
    sentences_path: PathLike,
    index: IndexFiles,
    settings: MeasureSettings,
    outputs: MeasureOutputs,
    transform: str = "none",
    model_settings: ModelSettings | None = None,
    transform_fit: TransformFit | None = None,
    degeneration_outputs: DegenerationOutputs | None = None,
    layer: int | None = None,
) -> dict[str, Any]:
    """All measures of one layer under one transform (`analysis.measure_layer`): per-word
    and per-sentence tables, a JSON summary and (with `degeneration_outputs`) the layer's
    degeneration analysis, its position profile and its ``[position>0]`` measures.

    shards: the layer's shard, or the shards of its parts in order (a partitioned
    extraction, gathered into the same rows). sentences_path: the sentence table, whose
    ``n_copies`` the paper's estimators use. With `model_settings` (the model's settings as
    its extraction had them, `storage.shards.expected_extraction`) a shard extracted with
    other settings is refused rather than measured, and with `layer` a shard of another
    layer. A transform other than ``none`` is fitted as `transform_fit` says
    (`layers.load_layer`) and measured on the other sentences.
    """
    registry.check_left_out(settings.leave_out)  # before any data is read
    sentence_table = index.read_sentences(sentences_path)
    index_summary = index.read_summary()
    vocab = index.read_vocab()
    # Held as float32, as a correction leaves it: numpy's float16 arithmetic is slow (held as
    # float16, a MiniLM layer takes 0.8 s more of a 4.9 s job); passes widen a chunk at a time.
    layer = load_layer(
        shards,
        index_summary,
        index.read_occurrences(),
        transform,
        transform_fit,
        expected_extraction(model_settings, layer),
        dtype="float32",
    )
    provenance = _layer_provenance(
        layer.attributes, transform, settings, transform_fit=layer.transform_fit
    )
    log.info("layer read: %d occurrences × %d dimensions", *layer.vectors.shape)
    correlations = {}
    if degeneration_outputs is not None:
        log.info("degeneration: norms and neighbours by frequency")
        correlations = _write_degeneration(layer, vocab, degeneration_outputs, provenance)
    log.info("SelfSim, IntraSim, MEV, baselines and their intervals")
    # Last, as it drops the rows without a vector in place (the layer is held once).
    measured = analysis.measure_layer(
        layer.vectors,
        layer.occurrences,
        vocab,
        settings,
        sentence_table["n_copies"].to_numpy(),
        overwrite=True,
        positions=degeneration_outputs is not None,
        # Raw rows were widened from the shard's dtype; a correction's are its own.
        stored_dtype=layer.attributes.get("dtype") if transform == "none" else None,
    )
    measured.summary["measures"].update(correlations)
    if degeneration_outputs is not None:
        labels = {key: provenance[key] for key in ("model", "transform", "layer")}
        profile = measured.positions.assign(**labels)
        write_parquet(profile, degeneration_outputs.positions, provenance)
    return outputs.write(measured, provenance)


def measure_streamed_layer(
    state_path: PathLike,
    index: IndexFiles,
    settings: MeasureSettings,
    outputs: MeasureOutputs,
    model_settings: ModelSettings | None = None,
    layer: int | None = None,
) -> dict[str, Any]:
    """`measure_layer` for a layer streamed by the stream step (transform ``none`` only: a
    correction is fitted on vectors a stream no longer has): the same tables and summary,
    less the measures a stream cannot give, which the summary's ``streaming`` names."""
    from contextuality.streaming.measure import measure_streamed_layer as measure_state
    from contextuality.streaming.state import load_state

    registry.check_left_out(settings.leave_out)  # before any data is read
    index_summary = index.read_summary()
    occurrences = index.read_occurrences()
    expected = expected_extraction(model_settings, layer)
    state = load_state(state_path, index_summary["index_checksum"], len(occurrences), expected)
    measured = measure_state(state, occurrences, index.read_vocab(), settings)
    provenance = _layer_provenance(
        state.attributes,
        "none",
        settings,
        transform_fit=None,
        streamed=state.attributes["streaming"],
    )
    return outputs.write(measured, provenance)


def _layer_summary_provenance(layer_summary: dict[str, Any]) -> dict[str, Any]:
    """A layer summary's provenance: the summary without its measures."""
    return {key: value for key, value in layer_summary.items() if key != "measures"}


def measures_table(
    summary_paths: Sequence[PathLike],
    output: PathLike,
    dimension_paths: Sequence[PathLike] = (),
) -> pd.DataFrame:
    """The layer summaries as one table (`summary.measures_table`), with the intrinsic
    dimension of each stored model's layers (the geometry step's summaries, transform
    ``none``), its provenance gathering every layer summary's."""
    summaries = summary.read_layer_summaries([*summary_paths, *dimension_paths])
    table = summary.measures_table(summaries)
    sources = [_layer_summary_provenance(layer_summary) for layer_summary in summaries]
    write_tsv(table, output, provenance_record(step="measures_table", sources=sources))
    return table


def census_table(summary_paths: Sequence[PathLike], output: PathLike, name: str) -> pd.DataFrame:
    """The layer summaries' census `name` (`record.Measure.census`, as
    ``massive_activations``) as one table (`summary.census_table`); a summary that left
    its measure out is refused, as its layers would read as having none."""
    record = registry.measure_of_census(name)
    summaries = summary.read_layer_summaries(summary_paths)
    for layer_summary in summaries:
        if record.name in registry.left_out(layer_summary["leave_out"]):
            raise ConfigError(
                f"{layer_summary['model']} layer {layer_summary['layer']} "
                f"({layer_summary['transform']}) was measured with {record.name} in "
                "measures.leave_out: it has no census"
            )
    table = summary.census_table(summaries, record.census)
    sources = [_layer_summary_provenance(layer_summary) for layer_summary in summaries]
    write_tsv(table, output, provenance_record(step=f"{name}_table", sources=sources))
    return table


def context_specific_words(
    words_paths: Sequence[PathLike], output: PathLike, top: int = 20
) -> pd.DataFrame:
    """Each layer's `top` most and least context-specific words of one model
    (`analysis.context_specific_words`), from its per-word tables."""
    layer_words, sources = {}, []
    for path in words_paths:
        table, provenance = read_parquet_with_provenance(path)
        sources.append(provenance)
        layer_words[int(provenance["layer"])] = table
    table = analysis.context_specific_words(layer_words, top)
    provenance = provenance_record(step="context_specific_words", top=top, sources=sources)
    write_tsv(table, output, provenance)
    return table


def positions_table(
    paths: Sequence[PathLike], output: PathLike, special_paths: Sequence[PathLike] = ()
) -> pd.DataFrame:
    """Every stored layer's position profile (`positions.position_profile`) as one TSV,
    with each model's special tokens (`positions.SpecialTokenProfile`, transform ``none``)
    as rows of their own after its word buckets: column ``kind`` (``word position``,
    ``special token``); ``cosine_share`` is theirs alone."""
    table, provenance = gather_parquet([*paths, *special_paths], "positions_table")
    if "kind" not in table:
        table["kind"] = WORD_POSITION
    if "cosine_share" not in table:
        table["cosine_share"] = float("nan")
    table["kind"] = table["kind"].fillna(WORD_POSITION)
    order = ["model", "transform", "layer", "special", "first_position"]
    table = (
        table.assign(special=table["kind"] != WORD_POSITION)
        .sort_values(order, kind="stable")
        .drop(columns="special")
        .reset_index(drop=True)
    )
    write_tsv(table, output, provenance)
    return table


# The kind of a position-profile row of word positions (against ``special token``).
WORD_POSITION = "word position"


def degeneration_table(bins_paths: Sequence[PathLike], output: PathLike) -> pd.DataFrame:
    """Every layer's degeneration by frequency bin in one table
    (`degeneration.degeneration_table`)."""
    table, provenance = gather_parquet(bins_paths, "degeneration_table")
    table = degeneration.degeneration_table([table])
    write_tsv(table, output, provenance)
    return table
