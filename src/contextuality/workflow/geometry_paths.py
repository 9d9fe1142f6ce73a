"""The paths of the geometry jobs: each stored model's layer geometry and the alignment
between pairs of models, under each transform of ``geometry.transforms``."""

from __future__ import annotations

from typing import Any

from contextuality.workflow.config import (
    geometry_models,
    geometry_transforms,
    model_layers,
)
from contextuality.workflow.paths import index_directory, model_shards, positions_table_files
from contextuality.workflow.sweeps import sweeps


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
