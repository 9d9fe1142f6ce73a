"""A streamed model extracted in parts, merged into the one job's state files.

Each part of a partitioned streaming extraction (``extraction.partitions``) sums its own
rows (`accumulate.StreamingAccumulator` with ``rows``) and keeps, of the whole index's
seeded samples, the rows that fall among them; its state files store each exact sum's
limbs (`exact.ExactSum`). `merge_parts` checks that the parts are those of one extraction,
each once, contiguous and covering every row, then adds their sums exactly, takes each
sentence's values from its part and lays their sampled rows end to end: the state one job
writes of the same rows, bit for bit, a part of no rows adding nothing. The parts' rows are
one job's bit for bit except in the segments a cut between parts crosses, which run in
other batches and agree within their dtype's rounding (`extraction.partitions`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.errors import ShardMismatchError
from contextuality.extraction.parity import merged_parity
from contextuality.storage.hdf5 import LayerFiles, read_attributes, read_checked, reading
from contextuality.streaming.accumulate import create_kept_datasets, write_sums
from contextuality.streaming.state import FORMAT
from contextuality.streaming.sums import DeviceLayerSums, RowIndex

# Attributes that differ from part to part, or from one job to its parts, by design.
PART_KEYS = (
    "part",
    "n_parts",
    "first_row",
    "part_rows",
    "n_rows_total",
    "first_sentence",
    "end_sentence",
    "segment_words",
)
PER_JOB_KEYS = (
    "created_utc",
    "n_missing",
    "n_valid",
    "same_sentence_pairs",
    "complete",
    "parity",
)


def _read_part(path: Path) -> dict[str, Any]:
    """A part's state file: its attributes and every dataset, checked against its digests;
    ShardMismatchError where it is not a complete part's state file."""
    with reading(path, "state file") as handle:
        attributes = read_attributes(handle)
        if attributes.get("format") != FORMAT or "part" not in attributes:
            raise ShardMismatchError(f"{path}: not the state file of a part of an extraction")
        if not attributes.get("complete", False):
            raise ShardMismatchError(f"{path}: incomplete state file (the part did not finish)")
        if "words_hi" not in handle:
            raise ShardMismatchError(f"{path}: holds no exact sums to merge; stream it again")
        return {
            "attributes": attributes,
            "data": {name: read_checked(handle[name]) for name in handle},
        }


def check_parts(paths: Sequence[Path], parts: list[dict[str, Any]]) -> None:
    """Refuse, in one line, parts that are not every part of one extraction once, in
    order: another count of parts, a part missing or twice, rows that leave a gap or
    overlap, or other settings or index than the first part's."""
    first = parts[0]["attributes"]
    n_parts = int(first["n_parts"])
    numbers = [int(part["attributes"]["part"]) for part in parts]
    if numbers != list(range(n_parts)):
        repeated = sorted({number for number in numbers if numbers.count(number) > 1})
        missing = sorted(set(range(n_parts)) - set(numbers))
        raise ShardMismatchError(
            f"{paths[0].parent.parent}: the parts of a {n_parts}-part extraction are "
            f"{numbers}, not 0 to {n_parts - 1} once each in order"
            + (f" (part {repeated[0]} twice)" if repeated else "")
            + (f" (part {missing[0]} missing)" if missing else "")
        )
    row = 0
    for path, part in zip(paths, parts, strict=True):
        attributes = part["attributes"]
        if int(attributes["first_row"]) != row:
            raise ShardMismatchError(
                f"{path}: starts at row {attributes['first_row']}, the parts before it end "
                f"at row {row}"
            )
        row += int(attributes["part_rows"])
        same = {k: v for k, v in attributes.items() if k not in PART_KEYS + PER_JOB_KEYS}
        expected = {k: v for k, v in first.items() if k not in PART_KEYS + PER_JOB_KEYS}
        if same != expected:
            differing = sorted(
                k for k in same.keys() | expected.keys() if same.get(k) != expected.get(k)
            )
            raise ShardMismatchError(
                f"{path}: a part of another extraction than {paths[0]} ({differing[0]} differs)"
            )
    if row != int(first["n_rows_total"]):
        raise ShardMismatchError(
            f"{paths[0].parent.parent}: the parts hold {row} rows, the index "
            f"{first['n_rows_total']}"
        )


def merge_parts(
    part_paths: dict[int, Sequence[str | os.PathLike]],
    outputs: dict[int, str | os.PathLike],
) -> dict[str, Any]:
    """Merge each layer's part state files (`part_paths`: per layer, every part's file in
    order) into one state file per layer (`outputs`), written together (all or none).
    Returns the merged files' attributes (of the last layer)."""
    layers = list(outputs)
    merged: dict[int, dict[str, Any]] = {}
    for layer in layers:
        paths = [Path(path) for path in part_paths[layer]]
        parts = [_read_part(path) for path in paths]
        check_parts(paths, parts)
        merged[layer] = _merged_layer(parts)
    attributes = {k: v for k, v in merged[layers[0]]["attributes"].items() if k != "layer"}
    files = LayerFiles(outputs, attributes)
    try:
        for layer, handle in files.files.items():
            layer_data = merged[layer]
            kept = create_kept_datasets(
                handle,
                layer_data["kept_rows"],
                layer_data["in_word_sample"],
                layer_data["dim"],
                layer_data["kept_vectors"].dtype,
            )
            kept[...] = layer_data["kept_vectors"]
            write_sums(handle, layer_data["word_id"], layer_data["sums"])
        files.commit({"n_missing": attributes["n_missing"]})
    except BaseException:
        files.abort()
        raise
    return attributes


def _merged_layer(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One layer's parts merged: their sums added in order, sentences' values taken from
    their part, sampled rows end to end."""
    import torch

    first = parts[0]
    data = first["data"]
    dim = int(first["attributes"]["dim"])
    n_sentences = len(data["sentence_n"])
    index = RowIndex(
        slot=torch.zeros(0, dtype=torch.int64),
        sentence=torch.zeros(0, dtype=torch.int64),
        copies=torch.zeros(n_sentences, dtype=torch.int64),
        n_words=len(data["word_id"]),
        n_sentences=n_sentences,
        dim=dim,
    )
    sums = DeviceLayerSums(index)
    for part in parts:
        if not np.array_equal(part["data"]["word_id"], data["word_id"]):
            raise ShardMismatchError("the parts track different words: parts of another index")
        totals = (part["attributes"]["n_valid"], part["attributes"]["same_sentence_pairs"])
        sums.merge(DeviceLayerSums.of_arrays(index, part["data"], totals))
    attributes = {
        key: value
        for key, value in first["attributes"].items()
        if key not in PART_KEYS + PER_JOB_KEYS
    }
    attributes["created_utc"] = datetime.now(UTC).isoformat(timespec="seconds")
    attributes["n_missing"] = sum(int(part["attributes"].get("n_missing", 0)) for part in parts)
    parity = merged_parity([part["attributes"].get("parity") for part in parts])
    if parity is not None:  # parts written by an extraction that checked (`run_extraction`)
        attributes["parity"] = parity
    return {
        "attributes": attributes,
        "dim": dim,
        "word_id": data["word_id"],
        "sums": sums,
        "kept_rows": np.concatenate([part["data"]["kept_rows"] for part in parts]),
        "in_word_sample": np.concatenate([part["data"]["in_word_sample"] for part in parts]),
        "kept_vectors": np.concatenate([part["data"]["kept_vectors"] for part in parts]),
    }
