"""Which of a model's layers its extraction writes, given what results/ already holds, and
the extraction and merge rules' files that follow from it.

A model's layers are extracted in one forward pass, but a layer list grown by a few
layers should not extract the others again, nor rewrite their shards: Snakemake removes
a job's outputs before it runs. So the extraction's outputs are the layers the config
names that are not stored yet, where the others are stored from this same extraction
(the shards' recorded settings hash, layer and occurrence index those of the config and
the index at hand, and every input of the extraction current and no newer than them);
else every layer the config names. A layer list shrunk, reordered, or written as
``null`` for the same layers names stored layers only, and plans no extraction.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import h5py

from contextuality.backends.base import tokenizer_key
from contextuality.corpus.index import INDEX_FILE_NAMES
from contextuality.errors import ShardMismatchError
from contextuality.files.provenance import read_json
from contextuality.storage.hdf5 import check_attributes
from contextuality.storage.shards import expected_extraction
from contextuality.workflow.config import (
    is_streamed,
    model_layers,
    model_names,
    model_settings,
)
from contextuality.workflow.inputs import MODEL_SOURCE, input_record
from contextuality.workflow.paths import (
    extraction_directory,
    extraction_inputs,
    index_directory,
    layer_file,
    part_directories,
)
from contextuality.workflow.study_files import SUBWORD_STAGE, settings_record


def _layer_files(config: dict[str, Any], model: str, layer: int) -> list[Path]:
    """Every file holding `layer` of `model`: a shard per part, and for a streamed model
    each part's state file and the merged one."""
    directories = part_directories(config, model, merged=False)
    if is_streamed(config, model):
        directories = list(dict.fromkeys([*directories, *part_directories(config, model)]))
    return [Path(directory) / layer_file(config, model, layer) for directory in directories]


def _holds(path: Path, index_checksum: str, expected: dict[str, Any] | None) -> bool:
    """Whether `path` is a complete file of this extraction of its layer."""
    try:
        with h5py.File(path, "r") as handle:
            check_attributes(path, dict(handle.attrs), index_checksum, expected)
    except (OSError, ShardMismatchError):
        return False
    return True


def _upstream_records(config: dict[str, Any], model: str) -> list[str]:
    """The records naming what `model`'s extraction is made from under this config: its
    corpus's files and settings, its index's settings and its own files. Each is named by
    a digest, so it exists only where its stage is current."""
    spec = model_settings(config, model)
    index_stage = "index" if spec.units == "word" else SUBWORD_STAGE + tokenizer_key(spec)
    return [
        *input_record(config, "corpus"),
        settings_record(config, "corpus"),
        settings_record(config, index_stage),
        *input_record(config, MODEL_SOURCE + model),
    ]


def stored_layers(config: dict[str, Any], model: str) -> list[int]:
    """The layers `model`'s config names that results/ holds from this same extraction,
    its inputs current and no newer than them."""
    files = {layer: _layer_files(config, model, layer) for layer in model_layers(config, model)}
    files = {layer: paths for layer, paths in files.items() if all(map(Path.is_file, paths))}
    if not files:
        return []
    summary = Path(index_directory(config, model)) / INDEX_FILE_NAMES["summary"]
    inputs = [
        Path(path)
        for path in [*extraction_inputs(config, model).values(), *_upstream_records(config, model)]
    ]
    if not all(path.is_file() for path in [*inputs, summary]):
        return []
    index_checksum = read_json(summary).get("index_checksum")
    newest_input = max(os.stat(path).st_mtime for path in inputs)
    spec = model_settings(config, model)
    return [
        layer
        for layer, paths in files.items()
        if all(
            os.stat(path).st_mtime >= newest_input
            and _holds(path, index_checksum, expected_extraction(spec, layer))
            for path in paths
        )
    ]


def layers_to_write(config: dict[str, Any], model: str) -> list[int]:
    """The layers `model`'s extraction writes: those its config names that are not
    `stored_layers`, where some are stored; else every layer it names."""
    layers = model_layers(config, model)
    stored = set(stored_layers(config, model))
    missing = [layer for layer in layers if layer not in stored]
    return missing if missing and stored else layers


def _stored_layer_numbers(directory: Path, suffix: str) -> set[int]:
    """The layers whose files `directory` holds (``layer_<L><suffix>``)."""
    numbers = set()
    for path in directory.glob(f"layer_*{suffix}"):
        number = path.name.removeprefix("layer_").removesuffix(suffix)
        if number.isdigit():
            numbers.add(int(number))
    return numbers


def warn_unnamed_layers(config: dict[str, Any]) -> None:
    """One WARNING line per model whose results/ directory holds layers its config no
    longer names: they stay on disk, and no table or figure lists them."""
    for model in model_names(config):
        suffix = layer_file(config, model, "").removeprefix("layer_")
        directories = {Path(directory) for directory in part_directories(config, model)}
        on_disk = set.union(set(), *(_stored_layer_numbers(path, suffix) for path in directories))
        unnamed = sorted(on_disk - set(model_layers(config, model)))
        if unnamed:
            listed = ", ".join(map(str, unnamed))
            where = ", ".join(sorted(f"{path}/" for path in directories))
            print(
                f"WARNING: models.{model}.layers no longer names layers {listed} stored in "
                f"{where}: they stay on disk and no table or figure lists them",
                file=sys.stderr,
            )


def extraction_outputs(config: dict[str, Any], model: str) -> dict[str, Any]:
    """The extraction rule's outputs for `model`: one file per layer it writes
    (``layers``: shards, or a streamed model's state files; `stored.layers_to_write`) and
    meta.json, those of part {part} (a wildcard) when it is partitioned."""
    directory = extraction_directory(config, model)
    return {
        "layers": [
            f"{directory}/{layer_file(config, model, layer)}"
            for layer in layers_to_write(config, model)
        ],
        "meta": f"{directory}/meta.json",
    }


def stream_merge_inputs(config: dict[str, Any], model: str) -> list[str]:
    """What a merge job of partitioned streamed model `model` reads: layer {layer}'s (a
    wildcard) state file of each part, in order. One job per layer, so a layer added,
    dropped or remade merges that layer alone."""
    return [
        f"{directory}/{layer_file(config, model, '{layer}')}"
        for directory in part_directories(config, model, merged=False)
    ]


def stream_merge_output(config: dict[str, Any], model: str) -> str:
    """The merged state file of layer {layer} (a wildcard) of partitioned streamed model
    `model`, where a one-job extraction writes it."""
    return f"results/streaming/{model}/{layer_file(config, model, '{layer}')}"


def stream_meta_inputs(config: dict[str, Any], model: str) -> list[str]:
    """The parts' meta.json files of partitioned streamed model `model`, in order."""
    return [f"{directory}/meta.json" for directory in part_directories(config, model, merged=False)]
