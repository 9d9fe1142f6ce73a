"""Extraction as the tests run it: every layer of a loaded model into shards in a
directory, read back (imported by the tests as a local module)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from contextuality.extract import extract_to_shards, sentence_units
from contextuality.shards import load_shard


def extract_every_layer(loaded, sentences, directory: Path, **spec_changes):
    """Extract every hidden state of `loaded` for `sentences` into `directory`, with the
    model spec's fields in `spec_changes` changed first (``max_length`` also sets the
    loaded model's window). Returns the extraction report and the vectors, shape
    (layers, units, d), as stored."""
    if spec_changes:
        loaded = dataclasses.replace(loaded, spec=dataclasses.replace(loaded.spec, **spec_changes))
        if "max_length" in spec_changes:
            loaded = dataclasses.replace(loaded, max_length=spec_changes["max_length"])
    layers = tuple(range(loaded.n_layers + 1))
    directory.mkdir(parents=True, exist_ok=True)
    paths = {layer: directory / f"layer{layer}.h5" for layer in layers}
    units = sentence_units(loaded, sentences)
    report = extract_to_shards(
        loaded, units, layers, paths, {"index_checksum": "i"}, progress=False
    )
    n_rows = int(units.counts.sum())
    vectors = np.stack([load_shard(paths[layer], "i", n_rows)[0] for layer in layers])
    return report, vectors
