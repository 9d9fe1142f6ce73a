"""The steps of workflow/rules/geometry.smk: a model's layer geometry (intrinsic dimension
per layer, CKA between its layers), CKA between two models, and the table gathering CKA.

Every model's shards are rows of the same occurrence index, so one seeded sample of rows
(config ``geometry.sample_size``; every row when null) is the same occurrences in every
model: CKA between models compares representations of exactly the same word tokens.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.backends.base import layer_output
from contextuality.corpus.index import IndexFiles
from contextuality.errors import warn
from contextuality.geometry import dimension
from contextuality.geometry.cka import SampledLayers, cka_between, sample_rows
from contextuality.measures.rows import rows_with_vectors
from contextuality.measures.summary import sampled_summary
from contextuality.provenance import config_hash, provenance_record, write_json
from contextuality.random_streams import generator
from contextuality.storage.shards import expected_extraction, load_shards
from contextuality.tables import gather_parquet, write_parquet, write_tsv

PathLike = str | os.PathLike

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelLayers:
    """A model's layer shards as the geometry steps read them: `shards` maps each layer
    to its shard or its parts' shards, `settings` is the model's config section (defaults
    filled in), refusing shards extracted otherwise."""

    name: str
    shards: dict[int, PathLike | Sequence[PathLike]]
    settings: dict[str, Any] | None = None

    @classmethod
    def of_inputs(
        cls, name: str, inputs: Any, settings: dict[str, Any] | None, prefix: str = ""
    ) -> ModelLayers:
        """A model's layers from a rule's named inputs ``<prefix>layer_<L>``
        (`workflow.model_shards`, `workflow.pair_shards`)."""
        marker = f"{prefix}layer_"
        shards = {
            int(key.removeprefix(marker)): inputs[key]
            for key in inputs.keys()  # noqa: SIM118 (a Snakemake input iterates over files)
            if key.startswith(marker)
        }
        return cls(name, shards, settings)


def read_sampled_layers(model: ModelLayers, index: IndexFiles, rows: np.ndarray) -> SampledLayers:
    """`rows` of every layer of `model`, checked against the index, its settings and the
    layer each shard must hold."""
    summary = index.read_summary()
    vectors, attributes = {}, {}
    for layer, shards in sorted(model.shards.items()):
        vectors[layer], attributes[layer] = load_shards(
            shards,
            summary["index_checksum"],
            n_rows=summary["n_occurrences"],
            expected=expected_extraction(model.settings, layer),
            dtype=None,
            rows=rows,
        )
    return SampledLayers(vectors, attributes)


def _source(attributes: dict[str, Any]) -> dict[str, Any]:
    """What a geometry output records of a model's shard."""
    keys = ("model", "model_id", "model_revision", "pooling", "corpus_checksum", "index_checksum")
    return {key: attributes[key] for key in keys} | {"shard_config_hash": attributes["config_hash"]}


def _dimension_summaries(
    sampled: SampledLayers, settings: dict[str, Any], provenance: dict[str, Any]
) -> list[dict[str, Any]]:
    """Each layer's intrinsic dimension as a layer summary of transform ``none`` (the
    measures table's rows ``intrinsic_dimension[twonn]`` and ``[gride]``)."""
    found = []
    dimension_settings = dimension.DimensionSettings(**settings["intrinsic_dimension"])
    for layer, vectors in sampled.vectors.items():
        attributes = sampled.attributes[layer]
        valid = vectors[rows_with_vectors(vectors)]
        rng = generator(settings["seed"], "dimension_samples")  # the same draws for every layer
        estimates, distinct = dimension.sampled_dimensions(valid, dimension_settings, rng)
        n_layers = int(attributes["n_layers"])
        measures = {
            f"intrinsic_dimension[{name}]": sampled_summary(
                values, int(distinct.min()), settings["confidence"]
            )
            for name, values in estimates.items()
        }
        if distinct.min() < dimension.MIN_DIMENSION_POINTS:
            warn(
                [
                    f"{attributes['model']} layer {layer}: intrinsic dimension from "
                    f"{int(distinct.min())} distinct points (fewer than "
                    f"{dimension.MIN_DIMENSION_POINTS}): its estimate means little, and is "
                    "NaN where too few to estimate"
                ]
            )
        log.info(
            "layer %d: TwoNN %.1f, GRIDE %.1f (%d distinct of %d sampled, least)",
            layer,
            measures["intrinsic_dimension[twonn]"]["raw"],
            measures["intrinsic_dimension[gride]"]["raw"],
            distinct.min(),
            min(dimension_settings.sample_size, len(valid)),
        )
        found.append(
            {
                **provenance,
                **_source(attributes),
                "transform": "none",
                "layer": layer,
                "n_layers": n_layers,
                "layer_output": layer_output(layer, n_layers, attributes["layer_conventions"]),
                "measures": measures,
            }
        )
    return found


def _sample(index: IndexFiles, settings: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, bool]:
    """The rows the geometry steps read, which of them are past their sentence's first
    word, and whether they are a sample of the index's rows."""
    n_rows = int(index.read_summary()["n_occurrences"])
    rows = sample_rows(n_rows, settings["sample_size"], settings["seed"])
    later = index.read_occurrences()["position"].to_numpy()[rows] > 0
    return rows, later, len(rows) < n_rows


def _provenance(step: str, settings: dict[str, Any], rows: np.ndarray, *models: SampledLayers):
    """What a geometry output records: its settings, the rows read and each model's shard."""
    return provenance_record(
        step=step,
        config_hash=config_hash(settings),
        seed=settings["seed"],
        n_sampled_rows=len(rows),
        models=[_source(next(iter(sampled.attributes.values()))) for sampled in models],
    )


def layer_geometry(
    model: ModelLayers,
    index: IndexFiles,
    settings: dict[str, Any],
    dimension_output: PathLike,
    cka_output: PathLike,
) -> pd.DataFrame:
    """A model's intrinsic dimension per layer (JSON: layer summaries for the measures
    table) and CKA between its layers (parquet, `CKA_COLUMNS`), from one sample of its
    rows. `settings`: config ``geometry`` with the measures' seed and confidence."""
    rows, later, sampled = _sample(index, settings)
    layers = read_sampled_layers(model, index, rows)
    provenance = _provenance("layer_geometry", settings, rows, layers)
    summaries = _dimension_summaries(layers, settings, provenance)
    write_json(dimension_output, {"layers": summaries})
    log.info("CKA between %d layers on %d rows", len(layers.vectors), len(rows))
    table = cka_between((model.name, layers), None, later, sampled, settings["seed"])
    write_parquet(table, cka_output, provenance)
    return table


def cka_between_models(
    left: ModelLayers,
    right: ModelLayers,
    index: IndexFiles,
    settings: dict[str, Any],
    output: PathLike,
) -> pd.DataFrame:
    """CKA between every layer of `left` and every layer of `right` on the same sampled
    occurrences (parquet, `CKA_COLUMNS`)."""
    rows, later, sampled = _sample(index, settings)
    layers = [read_sampled_layers(model, index, rows) for model in (left, right)]
    log.info("CKA between %s and %s on %d rows", left.name, right.name, len(rows))
    table = cka_between(
        (left.name, layers[0]), (right.name, layers[1]), later, sampled, settings["seed"]
    )
    write_parquet(table, output, _provenance("cka_between_models", settings, rows, *layers))
    return table


def cka_table(paths: Sequence[PathLike], output: PathLike) -> pd.DataFrame:
    """Every CKA table (within and between models) as one TSV, its provenance gathering
    theirs."""
    order = ["model_a", "model_b", "occurrences", "layer_a", "layer_b"]
    table, provenance = gather_parquet(paths, "cka_table", order)
    write_tsv(table, output, provenance)
    return table
