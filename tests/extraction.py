"""Extraction as the tests run it, without an occurrence index: a loaded model's layers for
some sentences into shards or any sink, and every layer read back (imported by the tests
as a local module)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from contextuality.corpus.index import IndexFiles, IndexSettings
from contextuality.corpus.settings import CorpusSettings
from contextuality.extraction.partitions import plan_extraction
from contextuality.extraction.report import ExtractionReport
from contextuality.extraction.run import Sink, extract, run_extraction
from contextuality.extraction.units import SentenceUnits, sentence_units
from contextuality.storage.shards import ShardSetWriter, load_shard


def with_spec(loaded, **spec_changes):
    """`loaded` with the model spec's fields in `spec_changes` changed (``max_length`` also
    sets the loaded model's window)."""
    if not spec_changes:
        return loaded
    loaded = dataclasses.replace(loaded, spec=dataclasses.replace(loaded.spec, **spec_changes))
    if "max_length" in spec_changes:
        loaded = dataclasses.replace(loaded, max_length=spec_changes["max_length"])
    return loaded


def extract_into(
    loaded,
    units: SentenceUnits,
    layers: tuple[int, ...],
    sink: Sink,
    part: int = 0,
    n_parts: int = 1,
) -> ExtractionReport:
    """Part `part` of `n_parts` of the extraction of `layers` into `sink`, as the extract
    step runs it."""
    plan = plan_extraction(loaded, units.counts, layers, part, n_parts)
    return run_extraction(loaded, units, plan, sink, progress=False, seed=0)


def extract_into_shards(
    loaded,
    units: SentenceUnits,
    layers: tuple[int, ...],
    paths: dict[int, Path],
    attributes: dict,
    storage_dtype: str | None = "float16",
    part: int = 0,
    n_parts: int = 1,
) -> ExtractionReport:
    """Part `part` of `n_parts` of the extraction of `layers` into shards at `paths`, as
    the extract step runs it: stored as `storage_dtype`, or, with None, as the model's
    ``storage_dtype`` setting says (``auto``: float16, float32 on overflow)."""
    plan = plan_extraction(loaded, units.counts, layers, part, n_parts)

    def open_sink(dtype: str) -> ShardSetWriter:
        return ShardSetWriter(
            {layer: paths[layer] for layer in plan.layers},
            plan.n_rows,
            loaded.hidden_size,
            dtype,
            {**attributes, "dtype": dtype, **plan.part_attributes()},
        )

    if storage_dtype is None:
        return extract(loaded, units, plan, open_sink, progress=False, seed=0)
    return run_extraction(loaded, units, plan, open_sink(storage_dtype), progress=False, seed=0)


def extract_every_layer(loaded, sentences, directory: Path, **spec_changes):
    """Extract every hidden state of `loaded` for `sentences` into `directory`, with the
    model spec's fields in `spec_changes` changed first (`with_spec`). Returns the
    extraction report and the vectors, shape (layers, units, d), as stored."""
    loaded = with_spec(loaded, **spec_changes)
    layers = tuple(range(loaded.n_layers + 1))
    directory.mkdir(parents=True, exist_ok=True)
    paths = {layer: directory / f"layer{layer}.h5" for layer in layers}
    units = sentence_units(loaded, sentences)
    report = extract_into_shards(loaded, units, layers, paths, {"index_checksum": "i"})
    n_rows = int(units.counts.sum())
    vectors = np.stack([load_shard(paths[layer], "i", n_rows)[0] for layer in layers])
    return report, vectors


def corpus_and_index(directory: Path, lines: list[str]) -> tuple[Path, IndexFiles]:
    """A sentence table and word occurrence index (min_contexts 1) of `lines`, one
    sentence a line, built under `directory` by the workflow's own steps."""
    from contextuality import steps

    text = directory / "corpus.txt"
    text.write_text("\n".join(lines) + "\n")
    settings = {
        "source": "text",
        "name": "t",
        "text": {"path": str(text), "split_sentences": False},
    }
    sentences = directory / "sentences.parquet"
    steps.sentences(CorpusSettings.from_config(settings), [text], sentences)
    index = IndexFiles(
        directory / "occ.parquet", directory / "vocab.parquet", directory / "index.json"
    )
    steps.occurrence_index(sentences, IndexSettings(min_contexts=1), index)
    return sentences, index
