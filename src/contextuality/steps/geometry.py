"""The steps of workflow/rules/geometry.smk: layer geometry, alignment, their tables; one
seeded sample of the index's rows (geometry.sample_size) is the same tokens in every model."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.api.geometry import (
    baselines_at_once,
    between_models_alignment,
    intrinsic_dimension,
    within_model_alignment,
)
from contextuality.backends.base import layer_output
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.index import IndexFiles
from contextuality.files.provenance import config_hash, provenance_record, sha256_file, write_json
from contextuality.files.tables import gather_parquet, write_parquet, write_tsv
from contextuality.geometry import dimension
from contextuality.geometry.alignment import (
    ALIGNMENT_OCCURRENCES,
    AlignmentResult,
    SampledLayers,
    SampleRows,
    sample_rows,
)
from contextuality.geometry.best_layers import empty_best_layers
from contextuality.geometry.paired import paired_alignment
from contextuality.geometry.resume import Resumed, resumable
from contextuality.geometry.sensitivity import (
    SENSITIVITY_COLUMNS,
    SensitivitySettings,
    best_matches,
    mutual_knn_grid,
    seed_spread,
)
from contextuality.geometry.settings import GeometrySettings
from contextuality.jobs.console import Progress, say
from contextuality.storage.shards import expected_extraction, load_shards
from contextuality.transforms.fitting import TRANSFORMS
from contextuality.transforms.layers import TransformFit, fit_correction, fitting_occurrences

PathLike = str | os.PathLike

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelLayers:
    """A model's layer shards as the geometry steps read them: `shards` maps each layer
    to its shard or its parts' shards; with `settings` (the model's settings as its
    extraction had them, `storage.shards.expected_extraction`) shards extracted otherwise
    are refused."""

    name: str
    shards: dict[int, PathLike | Sequence[PathLike]]
    settings: ModelSettings | None = None

    @classmethod
    def of_inputs(
        cls, name: str, inputs: Any, settings: ModelSettings | None, prefix: str = ""
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

    @classmethod
    def pair_of_inputs(
        cls, names: Sequence[str], inputs: Any, settings: dict[str, dict[str, Any]]
    ) -> tuple[ModelLayers, ModelLayers]:
        """Two models' layers from a rule's named inputs ``a_layer_<L>`` and
        ``b_layer_<L>`` (`workflow.pair_shards`), each with its settings (model → its
        config section, `workflow.vector_settings`)."""
        from contextuality import backends

        left, right = (
            cls.of_inputs(name, inputs, backends.model_settings(name, settings[name]), f"{side}_")
            for side, name in zip("ab", names, strict=True)
        )
        return left, right


@dataclass(frozen=True)
class GeometryTransform:
    """The vectors a geometry step reads: as stored (``none``), or under a correction
    (`fitting.TRANSFORMS`) fitted as `fit` says on the held-out sentences of each layer
    (the measure step's fit of that layer, `layers.fit_correction`), the sample then
    restricted to the other sentences."""

    name: str = "none"
    fit: TransformFit | None = None

    def __post_init__(self) -> None:
        if self.name != "none" and self.fit is None:
            raise ValueError(f"transform '{self.name}' needs the fit split and its settings")

    @classmethod
    def of_job(
        cls, name: str, split: PathLike | None, fit_settings: dict[str, Any]
    ) -> GeometryTransform:
        """Transform `name` as a job is given it: its fit split (None under ``none``) and
        the config's fit settings (`TransformFit.of`)."""
        return cls(name, TransformFit.of(split, fit_settings))


RAW = GeometryTransform()


def _read_sampled_layers(
    model: ModelLayers, index: IndexFiles, rows: np.ndarray, transform: GeometryTransform = RAW
) -> SampledLayers:
    """`rows` of every layer of `model` (as stored, or corrected as `transform` says),
    checked against the index, its settings and the layer each shard must hold."""
    summary = index.read_summary()
    occurrences = None if transform.fit is None else index.read_occurrences()
    vectors, attributes, fits = {}, {}, {}
    for layer, shards in sorted(model.shards.items()):
        load = functools.partial(
            load_shards,
            shards,
            summary["index_checksum"],
            n_rows=summary["n_occurrences"],
            expected=expected_extraction(model.settings, layer),
        )
        if transform.fit is None:
            vectors[layer], attributes[layer] = load(dtype=None, rows=rows)
            continue
        correction = fit_correction(load, transform.name, transform.fit, occurrences, summary)
        if correction.in_fit[rows].any():
            raise ValueError(f"{transform.name}: the rows read include its fitting sentences")
        vectors[layer], attributes[layer] = correction.read(load, rows)
        fits[layer] = correction.record
    return SampledLayers(vectors, attributes, fits)


def _source(attributes: dict[str, Any]) -> dict[str, Any]:
    """What a geometry output records of a model's shard."""
    keys = ("model", "model_id", "model_revision", "pooling", "corpus_checksum", "index_checksum")
    return {key: attributes[key] for key in keys} | {"shard_config_hash": attributes["config_hash"]}


def _dimension_summaries(
    sampled: SampledLayers, settings: GeometrySettings, provenance: dict[str, Any], transform: str
) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """Each layer's intrinsic dimension as a layer summary of `transform` (the measures
    table's rows ``intrinsic_dimension[twonn]`` and ``[gride]``; under a correction with
    its fit's record, as the measure step's summaries), and every layer's curves as one
    table."""
    summaries, rows = [], []
    name = next(iter(sampled.attributes.values()))["model"]
    told = Progress(f"{name} ({transform}): intrinsic dimension", len(sampled.vectors), "layers")
    for layer, vectors in sampled.vectors.items():
        attributes = sampled.attributes[layer]
        n_layers = int(attributes["n_layers"])
        found = intrinsic_dimension(
            vectors,
            settings,
            model=attributes["model"],
            layer=layer,
            n_layers=n_layers,
            layer_output=layer_output(layer, n_layers, attributes["layer_conventions"]),
            transform=transform,
        )
        fit = {"transform_fit": sampled.fits[layer]} if layer in sampled.fits else {}
        summaries.append({**provenance, **_source(attributes), **fit, **found.summary})
        rows += found.curve_rows
        told.update()
    told.finish()
    return summaries, pd.DataFrame(rows, columns=list(dimension.CURVE_COLUMNS))


def _sample(
    index: IndexFiles, settings: GeometrySettings, transform: GeometryTransform = RAW
) -> tuple[np.ndarray, SampleRows]:
    """The rows the geometry steps read and what the alignment needs of them
    (`SampleRows`: which are past their sentence's first word, their sentences, whether
    they are a sample of the index's rows). Under a correction, the sample's rows outside
    its fitting sentences: a subset of the rows read raw, the same occurrences in every
    model and layer."""
    summary = index.read_summary()
    n_rows = int(summary["n_occurrences"])
    rows = sample_rows(n_rows, settings.sample_size, settings.seed)
    occurrences = index.read_occurrences()
    if transform.fit is not None:
        in_fit, _ = fitting_occurrences(transform.fit, occurrences, summary)
        rows = rows[~in_fit[rows]]
    positions = occurrences["position"].to_numpy()[rows]
    return rows, SampleRows(
        later=positions > 0,
        sentences=occurrences["sentence_id"].to_numpy()[rows],
        sampled=settings.sample_size is not None and settings.sample_size < n_rows,
        words=occurrences["word_id"].to_numpy()[rows],
        positions=positions,
    )


def _model_provenance(sampled: SampledLayers) -> dict[str, Any]:
    """What a geometry output records of a model: its shards, and each layer's fit of a
    correction where there is one."""
    source = _source(next(iter(sampled.attributes.values())))
    if not sampled.fits:
        return source
    return source | {"transform_fits": {str(layer): fit for layer, fit in sampled.fits.items()}}


def _provenance(
    step: str,
    settings: GeometrySettings,
    rows: np.ndarray,
    transform: str,
    *models: SampledLayers,
):
    """What a geometry output records: its settings, the transform, the rows read and each
    model's shard (with each layer's fit under a correction)."""
    return provenance_record(
        step=step,
        config_hash=config_hash(settings.config),
        seed=settings.seed,
        transform=transform,
        n_sampled_rows=len(rows),
        models=[_model_provenance(sampled) for sampled in models],
    )


def layer_dimension(
    model: ModelLayers,
    index: IndexFiles,
    settings: GeometrySettings,
    dimension_output: PathLike,
    curves_output: PathLike,
    transform: GeometryTransform = RAW,
) -> list[dict[str, Any]]:
    """The intrinsic dimension of each layer of `model` (the workflow: a job a layer) on a
    sample of its rows, as stored or corrected (`GeometryTransform`): JSON, the layer
    summaries (returned); parquet, its curves over scale (`dimension.CURVE_COLUMNS`)."""
    rows, _ = _sample(index, settings, transform)
    layers = _read_sampled_layers(model, index, rows, transform)
    outputs = (dimension_output, curves_output)
    return _dimension_written(model.name, layers, rows, settings, transform, *outputs)


def _dimension_written(
    name: str,
    layers: SampledLayers,
    rows: np.ndarray,
    settings: GeometrySettings,
    transform: GeometryTransform,
    dimension_output: PathLike,
    curves_output: PathLike,
) -> list[dict[str, Any]]:
    """`layer_dimension` of the `layers` read from `rows`."""
    numbers = ", ".join(map(str, layers.vectors))
    what = f"layer{'s' if len(layers.vectors) > 1 else ''} {numbers} on {len(rows):,} rows"
    say(f"{name} ({transform.name}): intrinsic dimension of {what}")
    provenance = _provenance("layer_dimension", settings, rows, transform.name, layers)
    summaries, curves = _dimension_summaries(layers, settings, provenance, transform.name)
    write_json(dimension_output, {"layers": summaries})
    write_parquet(curves, curves_output, provenance)
    return summaries


def layer_geometry(
    model: ModelLayers,
    index: IndexFiles,
    settings: GeometrySettings,
    dimension_output: PathLike,
    curves_output: PathLike,
    alignment_output: PathLike,
    transform: GeometryTransform = RAW,
) -> pd.DataFrame:
    """A model's whole layer geometry in one call: `layer_dimension` of every layer, then
    `layer_alignment` (returned), from one reading of the same sample of its rows. The
    alignment's device is checked first, before anything is read or written."""
    settings.alignment.search_device()
    rows, sample = _sample(index, settings, transform)
    layers = _read_sampled_layers(model, index, rows, transform)
    outputs = (dimension_output, curves_output)
    _dimension_written(model.name, layers, rows, settings, transform, *outputs)
    return _alignment_written(
        model.name, layers, rows, sample, settings, transform, alignment_output
    )


def baseline_alignment(
    model: ModelLayers,
    index: IndexFiles,
    settings: GeometrySettings,
    transform: GeometryTransform = RAW,
) -> pd.DataFrame:
    """The alignment between every layer of `model` and each word baseline alone
    (`ALIGNMENT_COLUMNS`), as `layer_alignment` writes it beside the alignment between
    the layers: the baselines a study of the alignment between models alone needs, from
    Python."""
    rows, sample = _sample(index, settings, transform)
    layers = _read_sampled_layers(model, index, rows, transform)
    log.info("alignment of %d layers with the word baselines", len(layers.vectors))
    return baselines_at_once(model.name, layers, sample, settings, transform.name)


def layer_alignment(
    model: ModelLayers,
    index: IndexFiles,
    settings: GeometrySettings,
    transform: GeometryTransform = RAW,
    output: PathLike | None = None,
) -> pd.DataFrame:
    """The alignment between every two layers of `model` and with each word baseline (on
    every sampled occurrence) (`ALIGNMENT_COLUMNS`), from one sample of its rows, as
    stored or under a correction (`GeometryTransform`); written to `output` (parquet)
    with its provenance where given. The device is checked before anything is read."""
    settings.alignment.search_device()
    rows, sample = _sample(index, settings, transform)
    layers = _read_sampled_layers(model, index, rows, transform)
    return _alignment_written(model.name, layers, rows, sample, settings, transform, output)


def _alignment_written(
    name: str,
    layers: SampledLayers,
    rows: np.ndarray,
    sample: SampleRows,
    settings: GeometrySettings,
    transform: GeometryTransform,
    output: PathLike | None,
) -> pd.DataFrame:
    """`layer_alignment` of the `layers` read from `rows`."""
    what = f"{len(layers.vectors)} layers on {len(rows):,} rows"
    say(f"{name} ({transform.name}): alignment of {what}")
    with resumable(output) as folder:
        table = within_model_alignment(
            name, layers, sample, settings, transform.name, **folder.keywords
        )
        if output is not None:
            provenance = _provenance("layer_alignment", settings, rows, transform.name, layers)
            write_parquet(table, output, provenance | _resumed(folder.resumed))
    return table


def _resumed(resumed: Resumed) -> dict[str, Any]:
    """What an alignment's output records of the parts it read from a stopped run of its
    job: how many, and their seconds there (with the job's own, the alignment's work)."""
    return {"resumed_parts": resumed.parts, "resumed_seconds": round(resumed.seconds, 1)}


def paired_layer_alignment(
    left: ModelLayers,
    right: ModelLayers | None,
    pairing: str,
    index: IndexFiles,
    settings: GeometrySettings,
    transform: GeometryTransform = RAW,
    occurrences: tuple[str, ...] = ALIGNMENT_OCCURRENCES,
) -> pd.DataFrame:
    """The alignment (`ALIGNMENT_COLUMNS`) of each pair of `pairing` alone
    (`paired.paired_alignment`): ``adjacent``, each layer of `left` with the next;
    ``matching``, each layer of `left` with the same layer of `right` (an ablated copy),
    on the `occurrences` named: the whole table's rows for those pairs, at a fraction of
    its cost."""
    settings.alignment.search_device()
    rows, sample = _sample(index, settings, transform)
    models = [left] if right is None else [left, right]
    layers = [_read_sampled_layers(model, index, rows, transform) for model in models]
    sides = [(model.name, sampled) for model, sampled in zip(models, layers, strict=True)]
    arguments = (sample, settings.seed, settings.confidence, settings.alignment, transform.name)
    right_side = None if right is None else sides[1]
    return paired_alignment(sides[0], right_side, pairing, *arguments, occurrences)


def alignment_between_models(
    left: ModelLayers,
    right: ModelLayers,
    index: IndexFiles,
    settings: GeometrySettings,
    output: PathLike,
    best_layers_output: PathLike,
    transform: GeometryTransform = RAW,
) -> AlignmentResult:
    """The alignment between every layer of `left` and of `right` on the same sampled rows
    (`ALIGNMENT_COLUMNS`) and each layer's best match in the other (`BEST_LAYER_COLUMNS`),
    parquet, each model as stored or under its own fit of a correction (`GeometryTransform`)."""
    settings.alignment.search_device()
    rows, sample = _sample(index, settings, transform)
    layers = [_read_sampled_layers(model, index, rows, transform) for model in (left, right)]
    say(f"{left.name} and {right.name} ({transform.name}): alignment on {len(rows):,} rows")
    provenance = _provenance("alignment_between_models", settings, rows, transform.name, *layers)
    with resumable(output) as folder:
        sides = ((left.name, layers[0]), (right.name, layers[1]))
        found = between_models_alignment(sides, sample, settings, transform.name, **folder.keywords)
        provenance |= _resumed(folder.resumed)
        write_parquet(found.table, output, provenance)
        write_parquet(found.best_layers, best_layers_output, provenance)
    return found


def _by_transform(table: pd.DataFrame) -> pd.DataFrame:
    """`table`'s rows grouped by transform, in the order of `fitting.TRANSFORMS`, each
    group in its order."""
    rank = table["transform"].map({name: place for place, name in enumerate(TRANSFORMS)})
    return table.iloc[np.argsort(rank.to_numpy(), kind="stable")].reset_index(drop=True)


def alignment_table(
    paths: Sequence[PathLike],
    best_layer_paths: Sequence[PathLike],
    output: PathLike,
    best_layers_output: PathLike,
) -> pd.DataFrame:
    """Every alignment table (within and between models) as one TSV, and every pair of
    models' best-matching layers (`best_layers.best_matching_layers`) as another, their
    provenance gathering theirs."""
    order = ["model_a", "model_b", "occurrences", "layer_a", "layer_b"]
    table, provenance = gather_parquet(paths, "alignment_table", order)
    table = _by_transform(table)
    write_tsv(table, output, provenance)
    if best_layer_paths:
        best_order = ["model", "other_model", "occurrences", "measure", "layer"]
        best, best_provenance = gather_parquet(best_layer_paths, "best_layers", best_order)
    else:
        best, best_provenance = empty_best_layers(), provenance_record(step="best_layers")
    write_tsv(_by_transform(best), best_layers_output, best_provenance)
    return table


def dimension_scales_table(paths: Sequence[PathLike], output: PathLike) -> pd.DataFrame:
    """Every model's intrinsic-dimension curves as one TSV, its provenance gathering theirs."""
    order = ["model", "estimator", "layer", "radius"]
    table, provenance = gather_parquet(paths, "dimension_scales_table", order)
    table = _by_transform(table)
    write_tsv(table, output, provenance)
    return table


def alignment_sensitivity(
    left: ModelLayers,
    right: ModelLayers,
    index: IndexFiles,
    settings: GeometrySettings,
    sensitivity: SensitivitySettings,
    output: PathLike,
) -> pd.DataFrame:
    """Mutual k-NN between every layer of `left` and every layer of `right` for each
    sample and k of `sensitivity` (`sensitivity.mutual_knn_grid`), each sample drawn as
    the geometry stage draws its own (`alignment.sample_rows`), written to `output`
    (parquet, ``model_a``, ``model_b`` and `SENSITIVITY_COLUMNS`) with its provenance."""
    device = settings.alignment.search_device()
    summary = index.read_summary()
    n_rows = summary["n_occurrences"]
    frames = []
    for size, seed in sensitivity.samples(n_rows):
        say(f"{left.name} and {right.name}: mutual k-NN on {size:,} rows drawn with seed {seed}")
        rows = sample_rows(n_rows, size, seed)
        sides = [_read_sampled_layers(model, index, rows) for model in (left, right)]
        grid = mutual_knn_grid(*(side.vectors for side in sides), sensitivity.ks(), seed, device)
        reference = [sensitivity.is_reference(size, seed, k, n_rows) for k in grid["k"]]
        frames.append(grid.assign(reference=reference, sample_size=size, seed=seed))
    table = pd.concat(frames, ignore_index=True).assign(model_a=left.name, model_b=right.name)
    table = table[["model_a", "model_b", *SENSITIVITY_COLUMNS]]
    provenance = provenance_record(
        step="alignment_sensitivity",
        index_checksum=summary["index_checksum"],
        settings=asdict(sensitivity),
        models={
            model.name: _model_provenance(side)
            for model, side in zip((left, right), sides, strict=True)
        },
    )
    write_parquet(table, output, provenance)
    return table


def alignment_sensitivity_tables(
    inputs: Sequence[PathLike], outputs: Sequence[PathLike], figures: Sequence[PathLike]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every pair's rows (`inputs`) gathered into three TSV tables, `outputs`: the rows,
    each setting's best match per layer (`sensitivity.best_matches`) and the spread of
    each pair of layers over the seeds (`sensitivity.seed_spread`); and the figure of how
    often each match is chosen (`figures.sensitivity`) into each of `figures`."""
    from contextuality.figures.sensitivity import plot_match_shares

    table, provenance = gather_parquet(inputs, "alignment_sensitivity_tables")
    found = (table, best_matches(table), seed_spread(table))
    for frame, path in zip(found, outputs, strict=True):
        write_tsv(frame, path, provenance)
    source = f"{os.path.basename(outputs[1])} sha256 {sha256_file(outputs[1])}"
    plot_match_shares(found[1], list(figures), source)
    return found
