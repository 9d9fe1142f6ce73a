"""The ``layer-geometry`` command (alias ``geometry``). A model's intrinsic dimension per
layer and the alignment between its layers, or the alignment between two models, from
their shards (as the workflow's geometry rules)."""

from __future__ import annotations

import argparse
from typing import Any

from contextuality import steps
from contextuality.cli.argument_types import device, nonnegative_int, output_file
from contextuality.cli.measure_commands import add_transform_arguments, fitted_on_split
from contextuality.corpus.index import IndexFiles
from contextuality.errors import ConfigError
from contextuality.geometry.alignment import GEOMETRY_SAMPLE_SIZE, AlignmentSettings
from contextuality.geometry.dimension import DimensionSettings
from contextuality.geometry.settings import GeometrySettings
from contextuality.measures.settings import MeasureSettings
from contextuality.storage.shards import shard_attributes

# The intrinsic-dimension settings (`DimensionSettings`) the command takes, with their help.
_DIMENSION_OPTIONS = {
    "range_max": "GRIDE's largest neighbour order (ratios r_2k/r_k with 2k at most this)",
    "min_points": "TwoNN's smallest subset when the rows are cut into 1, 2, 4, ... subsets",
    "plateau_width": "consecutive scales an intrinsic dimension's plateau spans",
    "plateau_tolerance": "largest relative range of a plateau's estimates",
}


def _model(shards: list[str]) -> steps.ModelLayers:
    """A model's layers from its shards (one per layer), named and numbered as they record."""
    attributes = {path: shard_attributes(path) for path in shards}
    names = {str(found["model"]) for found in attributes.values()}
    if len(names) != 1:
        raise ConfigError(f"geometry: shards of more than one model: {sorted(names)}")
    return steps.ModelLayers(
        names.pop(), {int(found["layer"]): [path] for path, found in attributes.items()}
    )


def _geometry(args: argparse.Namespace) -> None:
    settings = GeometrySettings.from_config(
        {
            "sample_size": args.sample_size or None,
            "seed": args.seed,
            "confidence": MeasureSettings.confidence,
            "intrinsic_dimension": {name: getattr(args, name) for name in _DIMENSION_OPTIONS},
            "alignment": {
                "k": args.neighbours,
                "device": args.device,
                "permutations": args.permutations,
                "bootstrap": args.bootstrap,
                "baselines": args.baselines,
            },
        }
    )
    if args.transform != "none" and not args.sentences:
        raise ConfigError(f"geometry --transform {args.transform} needs --sentences (its split)")
    index = IndexFiles.in_directory(args.index)
    model = _model(args.shard)
    transform = steps.GeometryTransform(args.transform, fitted_on_split(args, args.output))
    if args.versus:
        output = f"{args.output}.alignment.parquet"
        best = f"{args.output}.best_layers.parquet"
        other = _model(args.versus)
        steps.alignment_between_models(model, other, index, settings, output, best, transform)
    else:
        outputs = (
            f"{args.output}.dimension.json",
            f"{args.output}.dimension_scales.parquet",
            f"{args.output}.alignment.parquet",
        )
        steps.layer_geometry(model, index, settings, *outputs, transform=transform)


def add_geometry_command(commands: Any) -> None:
    """The 'geometry' command."""
    command = commands.add_parser(
        "layer-geometry",
        aliases=["geometry"],
        help="intrinsic dimension and alignment of a model's layers (or two models')",
    )
    command.add_argument("shard", nargs="+", help="the model's layer shards, one per layer")
    command.add_argument("--index", required=True, help="directory written by 'occurrence-index'")
    command.add_argument(
        "--versus",
        nargs="+",
        help="another model's shards: the alignment between the two models only",
    )
    add_transform_arguments(command, "compute the geometry")
    command.add_argument(
        "--sentences", help="sentences.parquet from 'sentences' (to split, under a correction)"
    )
    command.add_argument(
        "--neighbours",
        type=int,
        default=AlignmentSettings.k,
        help="neighbours per occurrence of mutual k-NN and CKNNA",
    )
    command.add_argument(
        "--device",
        type=device,
        default=AlignmentSettings.device,
        help="where the neighbours are searched: auto, or a device torch knows (cpu, cuda, "
        "cuda:N, mps, xpu, xpu:N)",
    )
    command.add_argument(
        "--permutations",
        type=int,
        default=AlignmentSettings.permutations,
        help="permutations of the rows each alignment value is calibrated against",
    )
    command.add_argument(
        "--bootstrap",
        type=int,
        default=AlignmentSettings.bootstrap,
        help="bootstrap draws over sentences of each value's interval (0: none)",
    )
    command.add_argument(
        "--baselines",
        nargs="*",
        default=list(AlignmentSettings.baselines),
        help="word baselines aligned with the layers: word_identity, word_position (none: no "
        "baseline)",
    )
    command.add_argument(
        "--sample-size",
        type=nonnegative_int,
        default=GEOMETRY_SAMPLE_SIZE,
        help="occurrences read (0: every one)",
    )
    for name, help_text in _DIMENSION_OPTIONS.items():
        default = getattr(DimensionSettings, name)
        command.add_argument(
            f"--{name.replace('_', '-')}", type=type(default), default=default, help=help_text
        )
    command.add_argument(
        "--seed", type=int, default=MeasureSettings.seed, help="seed of every sample"
    )
    command.add_argument(
        "-o",
        "--output",
        type=output_file,
        required=True,
        help="prefix of <prefix>.dimension.json, .dimension_scales.parquet, .alignment.parquet "
        "(with --versus: .alignment.parquet and .best_layers.parquet)",
    )
    command.set_defaults(run=_geometry)
