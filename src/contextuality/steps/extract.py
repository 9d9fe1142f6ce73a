"""The steps of workflow/rules/extract.smk. One model's forward pass over the corpus, into
shards (`extract`) or into running sums (`stream`), the states of the model's special
tokens (`special_tokens`), and the ELMo download."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality import backends
from contextuality.backends.base import LoadedModel, resolved_device, selected_layers, token_budget
from contextuality.backends.settings import ModelSettings
from contextuality.configuration import random_streams
from contextuality.corpus.index import IndexFiles
from contextuality.corpus.words import word_spans
from contextuality.errors import ConfigError, warn
from contextuality.extraction.collector import collector_paused
from contextuality.extraction.partitions import ExtractionPlan, plan_extraction
from contextuality.extraction.report import ExtractionReport, coverage_warnings, merged_meta
from contextuality.extraction.run import Sink
from contextuality.extraction.run import extract as run_extract
from contextuality.extraction.special_tokens import special_token_batches
from contextuality.extraction.units import SentenceUnits, sentence_units, units_matching_index
from contextuality.files.provenance import config_hash, provenance_record, read_json, write_json
from contextuality.files.tables import write_parquet
from contextuality.measures.positions import SpecialTokenProfile
from contextuality.measures.settings import MeasureSettings
from contextuality.storage.shards import ShardSetWriter

PathLike = str | os.PathLike

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LayerOutputs:
    """What an extraction job writes: one file per layer (a shard, or a streamed layer's
    state file) and the model's meta.json."""

    files: dict[int, PathLike]
    meta: PathLike


@dataclass
class _Prepared:
    """A model loaded and its job planned, its units checked against the index: the
    index's occurrences, each sentence's copies in the corpus, and the file of each
    layer, in the order the extraction hands them over."""

    loaded: LoadedModel
    units: SentenceUnits
    plan: ExtractionPlan
    attributes: dict[str, Any]
    occurrences: pd.DataFrame
    sentence_copies: np.ndarray
    files: dict[int, PathLike]


def _checked_layers(spec: ModelSettings, layer_files: dict[int, PathLike]) -> tuple[int, ...]:
    """The layers to extract, checked against the model's config (not its weights) and
    against the files asked for."""
    n_layers = backends.count_hidden_layers(spec)
    layers = selected_layers(spec, n_layers)
    out_of_range = [layer for layer in layers if not 0 <= layer <= n_layers]
    if out_of_range:
        raise ConfigError(
            f"model {spec.name}: layers {out_of_range} outside 0..{n_layers} (0 is the "
            f"embedding output, {n_layers} the last layer); fix models.{spec.name}.layers"
        )
    if set(layers) != set(layer_files):
        raise ConfigError(
            f"model {spec.name}: files for layers {sorted(layer_files)}, layers {list(layers)}"
        )
    return layers


@collector_paused()
def _prepare(
    spec: ModelSettings,
    sentences_path: PathLike,
    index: IndexFiles,
    layer_files: dict[int, PathLike],
    part: tuple[int, int],
    threads: int,
) -> _Prepared:
    """Load the model, plan its job and check its units against the index, before any
    forward pass; and the provenance every output of the job records. The garbage
    collector is paused meanwhile (`collector_paused`)."""
    import torch
    import transformers

    torch.set_num_threads(max(1, threads))
    name = spec.name
    sentence_table = index.read_sentences(sentences_path)
    sentences = sentence_table["text"].tolist()
    index_summary = index.read_summary()
    layers = _checked_layers(spec, layer_files)
    loaded = backends.load_model(spec, resolved_device(spec.device, f"models.{name}.device"))
    occurrences = index.read_occurrences()
    counts = np.bincount(occurrences["sentence_id"].to_numpy(), minlength=len(sentences))
    plan = plan_extraction(loaded, counts, layers, *part)
    sentence_range = (plan.first_sentence, plan.end_sentence) if plan.partitioned else None
    units = units_matching_index(
        loaded, sentences, occurrences, index_summary, str(index.summary), sentence_range
    )
    recorded = backends.recorded_settings(spec)
    attributes = provenance_record(
        **_model_source(spec, loaded, index_summary),
        settings=recorded,
        layer_conventions=loaded.layer_conventions(),
        model_file_checksums=loaded.file_checksums,
        transformers_version=transformers.__version__,
        torch_version=torch.__version__,
    )
    return _Prepared(
        loaded,
        units,
        plan,
        attributes,
        occurrences,
        sentence_table["n_copies"].to_numpy(),
        {layer: layer_files[layer] for layer in plan.layers},
    )


def _write_meta(job: _Prepared, report: ExtractionReport, path: PathLike) -> dict[str, Any]:
    """Write the job's meta.json (provenance, layers and the extraction report), and warn
    about the units that got no vector (`warn`), which meta.json lists too."""
    warnings = coverage_warnings(
        report,
        job.loaded.spec.name,
        job.loaded.max_length,
        job.occurrences["word"].to_numpy(),
        job.loaded.spec.units,
    )
    warn(warnings)
    meta = {
        **job.attributes,
        "layers": list(job.plan.layers),
        "hidden_size": job.loaded.hidden_size,
        "n_parameters": job.loaded.n_parameters,
        "max_length": job.loaded.max_length,
        **report.as_dict(),
        "warnings": warnings,
    }
    write_json(path, meta)
    return meta


def extract(
    model: ModelSettings,
    sentences_path: PathLike,
    index: IndexFiles,
    outputs: LayerOutputs,
    seed: int,
    part: tuple[int, int] = (0, 1),
    threads: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """Extract the configured layers of `model` into one shard per layer, and write its
    meta.json. seed: the run's (``measures.seed``), which draws the sentences the parity
    check runs alone too (`extraction.parity`).

    index: the occurrence index the shards align with, the word index or (``units:
    subword``) the model's subword index; the model's units are checked against it sentence
    by sentence before the forward pass. With ``storage_dtype: auto`` values are stored as
    float16 unless some value overflows it, in which case the job is run again into float32
    shards and the log says so.

    part: (K, N), extract only part K (0-based) of N, a contiguous range of sentences
    balanced by rows (`extraction.partitions.partition_bounds`), into shards that hold its
    rows alone and say which (``part``, ``n_parts``, ``first_row``, ``n_rows_total``;
    meta.json too); the measure and static-vector steps gather the parts' rows.
    """
    job = _prepare(model, sentences_path, index, outputs.files, part, threads)

    def open_sink(dtype: str) -> Sink:
        attributes = {**job.attributes, "dtype": dtype, **job.plan.part_attributes()}
        return ShardSetWriter(job.files, job.plan.n_rows, job.loaded.hidden_size, dtype, attributes)

    report = run_extract(job.loaded, job.units, job.plan, open_sink, progress, seed=seed)
    return _write_meta(job, report, outputs.meta)


def stream(
    model: ModelSettings,
    sentences_path: PathLike,
    index: IndexFiles,
    outputs: LayerOutputs,
    measures: MeasureSettings | None = None,
    word_sample_size: int | None = None,
    part: tuple[int, int] = (0, 1),
    threads: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """`extract` without shards: the same forward pass feeds a
    `streaming.accumulate.StreamingAccumulator`, which writes one state file per layer
    (the measure_streamed_layer and static_vectors steps read them), its sums on the GPU
    where the model runs on one.

    measures: the measures' settings (their seed, baseline sample size and replicates fix
    the MEV baseline's samples; None: the defaults); word_sample_size: occurrences kept per
    indexed word for MEV and the static vectors (None: `StreamingSettings`' default).
    Segments are stored as the model's ``storage_dtype`` says (float16 by default) before
    they are summed, so the measures equal those of shards. part: (K, N), sum only part K
    (0-based) of N, the rows `extract` would write for it, into state files that
    `merge_stream` merges.
    """
    from contextuality.streaming.accumulate import StreamingAccumulator
    from contextuality.streaming.state import StreamingSettings

    job = _prepare(model, sentences_path, index, outputs.files, part, threads)
    plan = job.plan
    indexed = index.read_vocab().sort_values("word_id")["indexed"].to_numpy()
    stream_settings = StreamingSettings.from_measures(
        measures or MeasureSettings(), word_sample_size
    )

    def open_sink(dtype: str) -> Sink:
        return StreamingAccumulator(
            job.files,
            job.occurrences["word_id"].to_numpy(),
            job.occurrences["sentence_id"].to_numpy(),
            job.loaded.hidden_size,
            {**job.attributes, "dtype": dtype, **plan.part_attributes()},
            stream_settings,
            indexed=indexed,
            sentence_copies=job.sentence_copies,
            dtype=dtype,
            device=str(next(job.loaded.model.parameters()).device),
            rows=(plan.first_row, plan.first_row + plan.n_rows) if plan.partitioned else None,
        )

    report = run_extract(
        job.loaded, job.units, plan, open_sink, progress, seed=stream_settings.seed
    )
    return _write_meta(job, report, outputs.meta)


def merge_stream_layer(layer: int, part_files: list[PathLike], output: PathLike) -> dict[str, Any]:
    """Layer `layer` of a streamed model extracted in parts (`stream` with ``part``): its
    parts' state files, in order, merged into `output` (`streaming.merge.merge_parts`: the
    state one job writes of the parts' rows, its sums exact). Returns its attributes."""
    from contextuality.streaming.merge import merge_parts

    return merge_parts({layer: part_files}, {layer: output})


def merge_stream_metas(part_metas: list[PathLike], output: PathLike) -> dict[str, Any]:
    """The meta.json files of a streamed model's parts, in order, merged into `output`
    (`report.merged_meta`)."""
    meta = merged_meta([read_json(path) for path in part_metas])
    write_json(output, meta)
    return meta


def merge_stream(
    part_files: dict[int, list[PathLike]], part_metas: list[PathLike], outputs: LayerOutputs
) -> dict[str, Any]:
    """Every layer of a streamed model extracted in parts merged (`merge_stream_layer`,
    written together: all or none) and their meta.json files (`merge_stream_metas`)."""
    from contextuality.streaming.merge import merge_parts

    merge_parts(part_files, outputs.files)
    return merge_stream_metas(part_metas, outputs.meta)


def _model_source(
    spec: ModelSettings, loaded: Any, index_summary: dict[str, Any]
) -> dict[str, Any]:
    """What an output of a model's forward passes records of the model and the index."""
    return {
        "model": spec.name,
        "model_id": spec.source,
        "model_revision": loaded.revision,
        "n_layers": loaded.n_layers,
        "pooling": spec.pooling,
        "corpus_checksum": index_summary["corpus_checksum"],
        "index_checksum": index_summary["index_checksum"],
        "config_hash": config_hash(backends.vector_settings(spec)),
    }


def special_tokens(
    spec: ModelSettings,
    sentences_path: PathLike,
    index: IndexFiles,
    output: PathLike,
    sample_size: int,
    seed: int,
    threads: int = 1,
) -> pd.DataFrame:
    """The special tokens' rows of model `spec`'s position profile
    (`positions.SpecialTokenProfile`), from a seeded sample of `sample_size` sentences
    (stream ``special_token_sentences`` of `seed`) run through the model in float32,
    written to `output` with their provenance. A model whose inputs hold no special token
    (GPT-2 without ``add_bos``) gets an empty table, and the console says so."""
    import torch

    torch.set_num_threads(max(1, threads))
    name = spec.name
    index_summary = index.read_summary()
    sentences = index.read_sentences(sentences_path)["text"].tolist()
    layers = selected_layers(spec, backends.count_hidden_layers(spec))
    loaded = backends.load_model(spec, resolved_device(spec.device, f"models.{name}.device"))
    rng = random_streams.generator(seed, "special_token_sentences")
    chosen = np.sort(rng.choice(len(sentences), min(sample_size, len(sentences)), replace=False))
    texts = [sentences[position] for position in chosen]
    if spec.units == "subword":
        units = sentence_units(loaded, texts)
    else:
        spans = word_spans(texts, index_summary["units"]["tokenizer"])
        units = sentence_units(loaded, texts, spans)
    device = next(loaded.model.parameters()).device.type
    profile = SpecialTokenProfile()
    budget = token_budget(spec, device)
    for batch in special_token_batches(loaded, units.encode(0, len(texts)), layers, budget):
        for rows in batch:
            profile.add(
                rows.layer,
                rows.words,
                rows.word_sentence,
                rows.special,
                rows.special_sentence,
                rows.special_kind,
                rows.special_position,
            )
    table = profile.table().assign(model=name, transform="none", kind="special token")
    if table.empty:
        warn([f"model {name}: its inputs hold no special token; no special-token rows"])
    log.info("special tokens of %s: %s", name, sorted(set(table["bucket"])))
    provenance = provenance_record(
        step="special_tokens",
        **_model_source(spec, loaded, index_summary),
        sample_size=len(texts),
        seed=seed,
        forward_dtype="float32",
    )
    write_parquet(table, output, provenance)
    return table


def download_elmo(
    release: str,
    directory: PathLike,
    mirror: PathLike | None,
    checksums: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Put a published ELMo release's options and weights into `directory` (as
    ``options.json`` and ``weights.hdf5``, from `mirror` or its URL), checked against
    `checksums` where given and against the options' layout, and record where they came
    from and their SHA-256 digests in its ``provenance.json``."""
    from contextuality.backends.elmo.release import RELEASE_FILES, RELEASES, fetch_release

    directory = Path(directory)
    digests = fetch_release(
        release, {file: directory / file for file in RELEASE_FILES}, mirror, checksums
    )
    published = RELEASES[release]
    record = provenance_record(
        step="download_elmo",
        release=release,
        urls={file: published.url(file) for file in RELEASE_FILES},
        mirror=None if mirror is None else str(mirror),
        sha256=digests,
        checksums_pinned=sorted(set(checksums or {}) & set(digests)),
    )
    write_json(directory / "provenance.json", record)
    return record
