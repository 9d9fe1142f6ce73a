"""The paths of the geometry jobs: each stored model's layer geometry and the alignment
between pairs of models, under each transform of ``geometry.transforms``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextuality.geometry.dimension import REPEAT_SPARE
from contextuality.workflow.config import (
    check_geometry_study,
    geometry_models,
    geometry_transforms,
    model_layers,
)
from contextuality.workflow.paths import index_directory, model_shards, positions_table_files
from contextuality.workflow.sweeps import sweeps

# What a geometry job holds at its peak beyond its sampled rows (`alignment_memory_needed`,
# `dimension_memory_needed`), fitted above the peaks bench/geometry_memory.py reads from
# finished runs:
# the interpreter with torch, FAISS and scikit-learn loaded (MB);
GEOMETRY_BASE_MB = 1200
# CKA's float64 cross-products of every layer side by side, (layers × width)² each: the
# values', a resample's and their chunk's;
CKA_PRODUCT_COPIES = 3
# one layer's sampled rows again this many times over while its neighbours are searched
# in an alignment job (its float32 unit rows, the index's own copy of them, the exact
# search's chunks);
SEARCH_COPIES_OF_A_LAYER = 10
# each row's k neighbours in every layer, in bytes per neighbour (indices and cosines,
# the sparse mask and kernel, an HSIC's sparse temporaries);
BYTES_PER_NEIGHBOUR = 60
# one layer's sampled rows again this many times over in its intrinsic-dimension job
# (float64 points, the float32 rows and the index's copy of them, the exact distances'
# chunks), above the peaks of STS's every occurrence;
DIMENSION_SEARCH_COPIES = 12
# each row's distances to its range_max nearest points and the spare ones searched past
# them (`dimension.REPEAT_SPARE`), with their rows (bytes);
BYTES_PER_DISTANCE = 16
# and the bytes of a stored value (float16), from which a shard's width is read.
STORED_BYTES_PER_VALUE = 2


def pair_shards(config: dict[str, Any], left: str, right: str) -> dict[str, list[str]]:
    """Both models' `model_shards`, named ``a_layer_<L>`` and ``b_layer_<L>``."""
    return {
        f"{side}_{name}": shards
        for side, model in (("a", left), ("b", right))
        for name, shards in model_shards(config, model).items()
    }


def alignment_model_pairs(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The pairs of stored models whose layers the alignment measures compare (config
    ``geometry.alignment_between_models``): each pair, in config order, whose rows are the same
    occurrences (the same index), but of two checkpoints of one sweep only consecutive
    ones (how far each training interval moves the layers)."""
    if not config["geometry"]["alignment_between_models"]:
        return []
    models = geometry_models(config)
    checkpoints = sweeps(config)
    sweep_of = {model: base for base, members in checkpoints.items() for model in members}
    consecutive = {
        pair
        for members in checkpoints.values()
        for pair in zip(list(members), list(members)[1:], strict=False)
    }
    return [
        (left, right)
        for position, left in enumerate(models)
        for right in models[position + 1 :]
        if index_directory(config, left) == index_directory(config, right)
        and (sweep_of.get(left, left) != sweep_of.get(right, right) or (left, right) in consecutive)
    ]


def alignment_files(config: dict[str, Any]) -> list[str]:
    """Every alignment table the alignment table gathers, under each geometry transform:
    each stored model's between its layers, then each pair of `alignment_model_pairs`."""
    stored = geometry_models(config)
    pairs = alignment_model_pairs(config)
    return [
        path
        for transform in geometry_transforms(config)
        for path in [f"results/geometry/{model}/{transform}/alignment.parquet" for model in stored]
        + [
            f"results/geometry/alignment_between_models/{transform}/{left}~{right}.parquet"
            for left, right in pairs
        ]
    ]


def best_layer_files(config: dict[str, Any]) -> list[str]:
    """Every pair of `alignment_model_pairs`' best-matching layers, under each geometry
    transform."""
    return [
        f"results/geometry/alignment_between_models/{transform}/{left}~{right}.best_layers.parquet"
        for transform in geometry_transforms(config)
        for left, right in alignment_model_pairs(config)
    ]


def dimension_files(config: dict[str, Any]) -> list[str]:
    """Each layer's intrinsic dimension file (its layer summaries) of every stored model,
    under each geometry transform: one job a layer (rule layer_dimension)."""
    return _dimension_outputs(config, "json")


def dimension_curve_files(config: dict[str, Any]) -> list[str]:
    """Each layer's intrinsic-dimension curves over scale of every stored model, under
    each geometry transform."""
    return _dimension_outputs(config, "parquet")


def _dimension_outputs(config: dict[str, Any], extension: str) -> list[str]:
    """The layer_dimension jobs' outputs ending in `extension`, every layer of every stored
    model under each geometry transform."""
    return [
        f"results/geometry/{model}/{transform}/dimension/layer_{layer}.{extension}"
        for transform in geometry_transforms(config)
        for model in geometry_models(config)
        for layer in model_layers(config, model)
    ]


def geometry_figure_names(config: dict[str, Any]) -> list[str]:
    """The geometry figures (`figures.specs.GEOMETRY_FIGURES`), the position profiles only
    where the degeneration analysis runs (it writes their table, `positions_table_files`), the
    best-matching layers only where two models are aligned, and the corrections' figure
    only where the geometry runs under one."""
    from contextuality.figures.specs import GEOMETRY_FIGURES

    left_out = set()
    if not alignment_model_pairs(config):
        left_out.add("best_layers")
    if not positions_table_files(config):
        left_out.add("positions")
    if len(geometry_transforms(config)) < 2:
        left_out.add("geometry_transforms")
    return [name for name in GEOMETRY_FIGURES if name not in left_out]


def geometry_figure_paths(
    config: dict[str, Any], extensions: tuple[str, ...] = ("png", "pdf")
) -> list[str]:
    """Every geometry figure of the run (`geometry_figure_names`) in each format, where the
    geometry runs."""
    if not geometry_models(config):
        return []
    names = geometry_figure_names(config)
    return [f"results/figures/{name}.{extension}" for name in names for extension in extensions]


def alignment_memory_needed(
    stored_bytes: int,
    rows: int,
    sampled: int,
    layers: int,
    neighbours: int,
    corrected: bool = False,
) -> int:
    """The memory (MB) an alignment job holds at its peak: `sampled` of the `rows` of
    `layers` layers stored in `stored_bytes` (float16; float32 once `corrected`), CKA's
    cross-products of them all, each layer's copies while it is searched and every
    layer's lists of `neighbours` (geometry.alignment.k) a row."""
    sampled_mb = _sampled_mb(stored_bytes, rows, sampled, corrected)
    widths = stored_bytes / (rows * STORED_BYTES_PER_VALUE)  # every layer's, side by side
    needed = (
        GEOMETRY_BASE_MB
        + CKA_PRODUCT_COPIES * 8 * widths**2 / 1e6
        + sampled_mb * (1 + SEARCH_COPIES_OF_A_LAYER / layers)
        + sampled * layers * neighbours * BYTES_PER_NEIGHBOUR / 1e6
    )
    return int(needed)


def dimension_memory_needed(
    stored_bytes: int, rows: int, sampled: int, distances: int, corrected: bool = False
) -> int:
    """The memory (MB) a layer's intrinsic-dimension job holds at its peak: `sampled` of
    the `rows` of its layer stored in `stored_bytes`, their copies while they are
    searched, and each row's `distances` (geometry.intrinsic_dimension.range_max) nearest
    points and the spare ones with their rows."""
    sampled_mb = _sampled_mb(stored_bytes, rows, sampled, corrected)
    needed = (
        GEOMETRY_BASE_MB
        + sampled_mb * (1 + DIMENSION_SEARCH_COPIES)
        + sampled * (distances + REPEAT_SPARE) * BYTES_PER_DISTANCE / 1e6
    )
    return int(needed)


def _sampled_mb(stored_bytes: int, rows: int, sampled: int, corrected: bool) -> float:
    """The MB of `sampled` of `rows` rows stored in `stored_bytes` as a job holds them:
    float16, float32 once corrected."""
    return stored_bytes * sampled / rows / 1e6 * (2 if corrected else 1)


def geometry_memory_mb(config: dict[str, Any], study: str) -> Callable[..., int]:
    """A geometry job's memory (MB) to ask a scheduler for: `dimension_memory_needed`
    (`study` ``intrinsic_dimension``: one layer's shards, input ``shard``) or
    `alignment_memory_needed` (``alignment``: inputs ``layer_<L>``, both models' for a
    pair) of its inputs, the index's occurrences (summary), ``geometry.sample_size`` of
    them (every one where null) and its transform (wildcard), above the peaks measured (a
    test checks, bench/geometry_memory.py); doubled on each retry. A Snakemake resource
    function of the job's wildcards and inputs."""
    check_geometry_study(study)
    geometry = config["geometry"]
    sample_size = geometry["sample_size"]
    neighbours = geometry["alignment"]["k"]
    distances = geometry["intrinsic_dimension"]["range_max"]
    layer_inputs = "shard" if study == "intrinsic_dimension" else "layer_"

    def memory_mb(wildcards: Any, input: Any, attempt: int = 1) -> int:
        layers = [getattr(input, key) for key in input.keys() if layer_inputs in key]  # noqa: SIM118
        stored = sum(
            os.path.getsize(path)
            for files in layers
            for path in ([files] if isinstance(files, str) else files)
        )
        rows = int(json.loads(Path(input.summary).read_text())["n_occurrences"])
        sampled = rows if sample_size is None else min(rows, sample_size)
        corrected = getattr(wildcards, "transform", "none") != "none"
        if study == "intrinsic_dimension":
            needed = dimension_memory_needed(stored, rows, sampled, distances, corrected)
        else:
            needed = alignment_memory_needed(
                stored, rows, sampled, len(layers), neighbours, corrected
            )
        return needed * 2 ** (attempt - 1)

    return memory_mb
