"""The steps of workflow/rules/static.smk: static vectors of each layer, and their scores
on the word benchmarks of the paper's Table 1."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from contextuality.corpus.index import IndexFiles
from contextuality.files.provenance import provenance_record, sha256_file
from contextuality.measures.static import static_vectors as layer_static_vectors
from contextuality.storage.shards import expected_extraction

if TYPE_CHECKING:  # the benchmarks are imported where a job scores
    from contextuality.benchmarks import ScoringSettings
from contextuality.files.tables import (
    check_against_sidecar,
    read_parquet,
    read_tsv,
    read_tsv_provenance,
    write_tsv,
)
from contextuality.storage.word_vectors import write_word2vec_text
from contextuality.transforms.layers import TransformFit, load_layer

PathLike = str | os.PathLike


def download_benchmarks(
    destinations: Sequence[PathLike], data_root: PathLike, mirror: PathLike | None
) -> None:
    """Put word-benchmark files at `destinations` (paths under `data_root`), verified."""
    from contextuality import benchmarks

    for destination in destinations:
        relative = Path(destination).relative_to(data_root).as_posix()
        benchmarks.fetch_benchmark_file(relative, destination, mirror)


def static_vectors(
    index: IndexFiles,
    method: str,
    output: PathLike,
    shards: PathLike | Sequence[PathLike] | None = None,
    state: PathLike | None = None,
    transform: str = "none",
    transform_fit: TransformFit | None = None,
    layer: int | None = None,
) -> None:
    """Static vectors (``pc1`` or ``mean``) of the indexed words of one layer, as word2vec
    text with a provenance sidecar; with `layer`, a shard or state file holding another
    layer is refused.

    The layer is its `shards` (its shard, or its parts' in order): under a transform
    other than ``none``, its corrected occurrences of the sentences the correction was not
    fitted on (`layers.load_layer`). Or it is a streamed layer's `state` file (``pc1`` from
    each word's sampled occurrences, ``mean`` exact).
    """
    if (shards is None) == (state is None):
        raise ValueError("static_vectors reads a layer's shards or its state file, not both")
    index_summary = index.read_summary()
    occurrences = index.read_occurrences()
    vocab = index.read_vocab()
    if state is not None:
        from contextuality.streaming.measure import static_vectors_from_state
        from contextuality.streaming.state import load_state

        found = load_state(
            state,
            index_summary["index_checksum"],
            len(occurrences),
            expected_extraction(None, layer),
        )
        words, matrix = static_vectors_from_state(found, occurrences, vocab, method)
        attributes, fit, streamed = (
            found.attributes,
            None,
            {"streamed": found.attributes["streaming"]},
        )
    else:
        read = load_layer(
            shards,
            index_summary,
            occurrences,
            transform,
            transform_fit,
            expected_extraction(None, layer),
            dtype="float32",
        )
        words, matrix = layer_static_vectors(read.vectors, read.occurrences, vocab, method)
        attributes, fit, streamed = read.attributes, read.transform_fit, {}
    provenance = provenance_record(
        step="static_vectors",
        model=attributes["model"],
        model_id=attributes["model_id"],
        layer=int(attributes["layer"]),
        method=method,
        transform=transform,
        transform_fit=fit,
        pooling=attributes["pooling"],
        index_checksum=attributes["index_checksum"],
        shard_config_hash=attributes["config_hash"],
        **streamed,
    )
    write_word2vec_text(output, words, matrix, provenance)


def score_static(
    vectors_path: PathLike,
    data_root: PathLike,
    settings: ScoringSettings,
    labels: dict[str, Any],
    output: PathLike,
    vocab_path: PathLike | None = None,
) -> pd.DataFrame:
    """Score one static embedding file on the configured word benchmarks.

    settings: which benchmarks, how their words are matched. labels: what the vectors are
    (model, method, layer, source, protocol), repeated on every row of the output table.
    Under the ``paper`` protocol the vectors are trimmed to `benchmarks.shared_vocabulary`
    of the word index's vocabulary at `vocab_path`. The table's provenance goes beside it.
    """
    from contextuality import benchmarks

    protocol = labels["protocol"]
    if protocol == "paper" and vocab_path is None:
        raise ValueError("the paper protocol needs the word index's vocabulary (vocab_path)")
    sidecar = Path(f"{vectors_path}.json")
    vectors_provenance = check_against_sidecar(vectors_path, sidecar) if sidecar.is_file() else None
    vectors = benchmarks.WordVectors.from_word2vec_text(vectors_path)
    shared = benchmarks.shared_vocabulary(read_parquet(vocab_path)) if protocol == "paper" else None
    table = benchmarks.score_benchmarks(
        vectors,
        data_root,
        settings.benchmarks,
        lowercase=settings.lowercase,
        oov=settings.oov,
        protocol=protocol,
        shared_vocabulary=shared,
    )
    for position, (key, value) in enumerate(labels.items()):
        table.insert(position, key, value)
    files = dict.fromkeys(
        f for name in settings.benchmarks for f in benchmarks.BENCHMARKS[name].files
    )
    provenance = provenance_record(
        step="score_static",
        **labels,
        settings=dataclasses.asdict(settings),
        vectors=str(vectors_path),
        vectors_sha256=sha256_file(vectors_path),
        vectors_provenance=vectors_provenance,
        benchmark_checksums={file: benchmarks.known_checksums()[file] for file in files},
        shared_vocabulary_sha256=sha256_file(vocab_path) if protocol == "paper" else None,
    )
    write_tsv(table, output, provenance)
    return table


def score_static_protocols(
    vectors_path: PathLike,
    data_root: PathLike,
    settings: ScoringSettings,
    labels: dict[str, dict[str, Any]],
    outputs: dict[str, PathLike],
    vocab_path: PathLike | None = None,
) -> None:
    """`score_static` under each protocol of `outputs` (protocol → score table), with that
    protocol's `labels`: one job scores an embedding every way, paying its start-up once."""
    for protocol, output in outputs.items():
        score_static(vectors_path, data_root, settings, labels[protocol], output, vocab_path)


def word_benchmarks_table(
    score_paths: Sequence[PathLike], output: PathLike, figure_outputs: Sequence[PathLike]
) -> pd.DataFrame:
    """All static-embedding scores in one table with the paper's quoted rows
    (`benchmarks.word_benchmarks_table`), and its heatmap."""
    from contextuality.benchmarks import word_benchmarks_table as gather
    from contextuality.figures.paper import plot_word_benchmarks

    scores = [read_tsv(path, dtype={"layer": "Int64"}) for path in score_paths]
    table = gather(scores)
    sources = [read_tsv_provenance(path) for path in score_paths]
    write_tsv(table, output, provenance_record(step="word_benchmarks_table", sources=sources))
    plot_word_benchmarks(table, list(figure_outputs))
    return table
