"""The workflow's steps as functions of paths and settings.

Each step reads its inputs, calls the library, and writes its outputs atomically with a
provenance record. The Snakemake scripts and the ``contextuality`` command line both call
these, so a step behaves the same inside and outside the workflow. Plotting, benchmark
scoring and the reference comparison are imported by the steps that use them, so that a
measure job does not pay for loading matplotlib and scipy.stats.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import logging
import os
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality import corpus as corpus_io
from contextuality.analysis import MeasureSettings, context_specific_words, measure_layer
from contextuality.degeneration import (
    BERT_FLOW_RANK_EDGES,
    DegenerationSettings,
    cone_projection,
    degeneration_table,
    frequency_correlations,
    occurrence_degeneration,
    rank_bins,
    word_degeneration,
)
from contextuality.errors import ConfigError, InputDataError, NumericOverflowError
from contextuality.extract import (
    BLOCK_WORDS,
    SentenceUnits,
    block_words_of,
    encode_running_text,
    extract_to_shards,
    part_sentences,
    subword_inputs,
    subword_units,
    units_of_part,
    word_inputs,
)
from contextuality.index import (
    IndexSettings,
    OccurrenceIndex,
    build_occurrence_index,
    corpus_checksum,
    index_checksum,
)
from contextuality.measures import rows_with_vectors
from contextuality.models import (
    LoadedModel,
    ModelSpec,
    count_hidden_layers,
    layer_output,
    load_model,
    load_tokenizer,
    selected_layers,
    tokenizer_key,
)
from contextuality.provenance import (
    config_hash,
    provenance_record,
    read_json,
    sha256_file,
    write_json,
)
from contextuality.shards import load_shards
from contextuality.static import static_vectors, write_word2vec_text
from contextuality.tables import (
    read_parquet,
    read_provenance,
    read_tsv_provenance,
    write_parquet,
    write_tsv,
)
from contextuality.transforms import TransformSettings, fit_transform, split_sentences
from contextuality.words import tokenize_sentences, word_spans

PathLike = str | os.PathLike
log = logging.getLogger(__name__)


def fetch_sts(year: int, destination: PathLike, mirror: PathLike | None) -> None:
    """Put STS `year`'s archive at `destination`, from the mirror or the network."""
    corpus_io.fetch_sts_archive(year, destination, mirror)


def build_sentences(
    settings: dict[str, Any], sources: Sequence[PathLike], output: PathLike
) -> None:
    """Sentence table from the configured corpus (``settings`` = config ``corpus``).

    sources: the STS archives in ``settings["sts"]["years"]`` order, or the text files
    (`corpus.text_corpus_files`), read in the order given.
    """
    if settings["source"] == "sts":
        sts = settings["sts"]
        sentences, checksums = [], {}
        for year, archive in zip(sts["years"], sources, strict=True):
            pairs, member_checksums = corpus_io.read_sts_archive(
                archive, year, sts["verify_checksums"]
            )
            if sts.get("scored_only", False):
                scored = [pair for pair in pairs if pair.gold is not None]
                log.info("STS %d: %d of %d pairs have a gold score", year, len(scored), len(pairs))
                pairs = scored
            sentences.extend(corpus_io.sts_sentences(pairs))
            checksums.update(member_checksums)
    else:
        one_per_line = not settings["text"]["split_sentences"]
        sentences, checksums = [], {}
        for path, label in zip(sources, corpus_io.corpus_file_labels(sources), strict=True):
            sentences.extend(corpus_io.read_text_corpus(path, one_per_line, label))
            checksums[label] = sha256_file(path)
    table = corpus_io.build_sentence_table(sentences)
    provenance = provenance_record(
        step="sentences",
        corpus=settings.get("name", settings["source"]),
        input_checksums=checksums,
        corpus_checksum=corpus_checksum(table["text"].tolist()),
        config_hash=config_hash(settings),
        n_sentences=len(table),
    )
    write_parquet(table, output, provenance)
    log.info("%d unique sentences from %d read", len(table), len(sentences))


def _write_index(
    index: OccurrenceIndex,
    texts: list[str],
    units: dict[str, Any],
    settings: IndexSettings,
    outputs: tuple[PathLike, PathLike, PathLike],
) -> None:
    """Write an index's occurrences, vocabulary and JSON summary, each with provenance."""
    occurrences_path, vocab_path, summary_path = outputs
    summary = provenance_record(
        step="index",
        units=units,
        corpus_checksum=corpus_checksum(texts),
        index_checksum=index_checksum(index.occurrences),
        config_hash=config_hash({**settings.as_dict(), "units": units}),
        **settings.as_dict(),
        n_sentences=len(texts),
        n_occurrences=len(index.occurrences),
        n_words=len(index.vocab),
        n_indexed_words=int(index.vocab["indexed"].sum()),
    )
    write_parquet(index.occurrences, occurrences_path, summary)
    write_parquet(index.vocab, vocab_path, summary)
    write_json(summary_path, summary)


def build_index(
    sentences_path: PathLike,
    settings: IndexSettings,
    occurrences_path: PathLike,
    vocab_path: PathLike,
    summary_path: PathLike,
) -> None:
    """Word occurrence index (words by ``settings.tokenizer``), vocabulary and a JSON summary
    with the index checksums."""
    table = read_parquet(sentences_path)
    texts = table["text"].tolist()
    words = tokenize_sentences(texts, settings.tokenizer)
    index = build_occurrence_index(words, settings, table["n_copies"].to_numpy())
    units = {"kind": "word", "tokenizer": settings.tokenizer}
    _write_index(index, texts, units, settings, (occurrences_path, vocab_path, summary_path))


def build_subword_index(
    sentences_path: PathLike,
    name: str,
    model_settings: dict[str, Any],
    settings: IndexSettings,
    occurrences_path: PathLike,
    vocab_path: PathLike,
    summary_path: PathLike,
) -> None:
    """Occurrence index whose units are the subwords of model `name`'s tokenizer (the
    running text's content tokens), for models with ``units: subword``.

    Only the tokenizer is loaded. ``settings.lowercase`` does not apply: a unit must be the
    token the model sees.
    """
    spec = ModelSpec.from_config(name, model_settings)
    tokenizer = load_tokenizer(spec)
    table = read_parquet(sentences_path)
    texts = table["text"].tolist()
    units = subword_units(tokenizer, encode_running_text(tokenizer, texts))
    settings = dataclasses.replace(settings, lowercase=False)
    index = build_occurrence_index(units, settings, table["n_copies"].to_numpy())
    described = {"kind": "subword", "tokenizer": tokenizer_key(spec), "source": spec.source}
    _write_index(index, texts, described, settings, (occurrences_path, vocab_path, summary_path))


def _device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def _units_matching_index(
    loaded: LoadedModel,
    sentences: list[str],
    occurrences_path: PathLike,
    index_summary_path: PathLike,
    part: int = 0,
    n_parts: int = 1,
    block_words: int = BLOCK_WORDS,
) -> SentenceUnits:
    """The model's units of every sentence, checked unit by unit against the occurrence index
    (a word index for word units, this tokenizer's subword index for subword units), so that
    shard row i is occurrence i. For part `part` of `n_parts` (of an extraction in blocks
    of `block_words`), only the part's sentences are tokenized and checked; the units of
    the others are counted from the index, which their own parts check
    (`extract.units_of_part`)."""
    index_summary = read_json(index_summary_path)
    described = index_summary.get("units", {})
    expected_kind = "subword" if loaded.spec.units == "subword" else "word"
    if described.get("kind") != expected_kind:
        raise InputDataError(
            f"model {loaded.spec.name} has {expected_kind} units but {index_summary_path} "
            f"indexes {described.get('kind', 'unknown')} units"
        )
    occurrences = read_parquet(occurrences_path)
    indexed = occurrences.groupby("sentence_id", sort=True)["word"].agg(list)
    first = 0
    if (part, n_parts) != (0, 1):
        counts = np.bincount(occurrences["sentence_id"].to_numpy(), minlength=len(sentences))
        first, end = part_sentences(counts, part, n_parts, block_words)
        sentences = sentences[first:end]
    if expected_kind == "subword":
        encodings = encode_running_text(loaded.tokenizer, sentences)
        found = subword_units(loaded.tokenizer, encodings)
        units = subword_inputs(loaded, encodings)
    else:
        spans = word_spans(sentences, described["tokenizer"])
        found = [
            [sentence[start:end] for start, end in sentence_spans]
            for sentence, sentence_spans in zip(sentences, spans, strict=True)
        ]
        units = word_inputs(loaded, sentences, spans)
        if index_summary.get("lowercase", False):
            found = [[word.lower() for word in words] for words in found]
    for sentence_id, words in enumerate(found, start=first):
        if words != indexed.get(sentence_id, []):
            raise InputDataError(
                f"sentence {sentence_id}: {index_summary_path} indexes "
                f"{indexed.get(sentence_id, [])} but model {loaded.spec.name} finds {words}; "
                "rebuild the occurrence index"
            )
    return units if (part, n_parts) == (0, 1) else units_of_part(units, counts, first)


def _checked_layers(spec: ModelSpec, shard_paths: dict[int, PathLike]) -> tuple[int, ...]:
    """The layers to extract, checked against the model's config (not its weights) and
    against the shard paths asked for."""
    n_layers = count_hidden_layers(spec)
    layers = selected_layers(spec, n_layers)
    out_of_range = [layer for layer in layers if not 0 <= layer <= n_layers]
    if out_of_range:
        raise ConfigError(
            f"model {spec.name}: layers {out_of_range} outside 0..{n_layers} (0 is the "
            f"embedding output, {n_layers} the last layer); fix models.{spec.name}.layers"
        )
    if set(layers) != set(shard_paths):
        raise ConfigError(
            f"model {spec.name}: shard paths for {sorted(shard_paths)}, layers {list(layers)}"
        )
    return layers


def _extract_with_storage_fallback(
    loaded: LoadedModel,
    units: SentenceUnits,
    layers: tuple[int, ...],
    shard_paths: dict[int, PathLike],
    attributes: dict[str, Any],
    progress: bool,
    part: int = 0,
    n_parts: int = 1,
    writer_for: Callable[[dict[str, Any], int], Any] | None = None,
) -> Any:
    """`extract_to_shards` in the model's storage dtype; with ``auto``, float16 first and,
    if a value overflows it, the whole model again as float32. writer_for(attributes,
    hidden_size): a fresh writer for each try, in place of the shards (see `stream_model`)."""
    spec = loaded.spec

    def extract(dtype: str) -> Any:
        writer = None
        if writer_for is not None:
            writer = writer_for({**attributes, "dtype": dtype}, loaded.hidden_size)
        return extract_to_shards(
            loaded,
            units,
            layers,
            shard_paths,
            {**attributes, "dtype": dtype},
            storage_dtype=dtype,
            progress=progress,
            part=part,
            n_parts=n_parts,
            writer=writer,
        )

    if spec.storage_dtype == "auto":
        try:
            return extract("float16")
        except NumericOverflowError as error:
            log.warning("%s; storing model %s as float32 instead", error, spec.name)
            return extract("float32")
    try:
        return extract(spec.storage_dtype)
    except NumericOverflowError as error:
        raise NumericOverflowError(
            f"{error}; set models.{spec.name}.storage_dtype: float32 (or auto)"
        ) from error


def extract_model(
    name: str,
    settings: dict[str, Any],
    sentences_path: PathLike,
    occurrences_path: PathLike,
    index_summary_path: PathLike,
    shard_paths: dict[int, PathLike],
    meta_path: PathLike,
    threads: int = 1,
    progress: bool = True,
    part: int = 0,
    n_parts: int = 1,
    writer_for: Callable[[dict[str, Any], int], Any] | None = None,
) -> dict[str, Any]:
    """Extract the configured layers of one model into shards and write its meta.json.

    occurrences_path, index_summary_path: the occurrence index the shards align with, the
    word index or (``units: subword``) the model's subword index; the model's units are
    checked against it sentence by sentence before the forward pass. With
    ``storage_dtype: auto`` values are stored as float16 unless some value overflows it, in
    which case the whole model is re-extracted as float32 and the log says so.

    part, n_parts: extract only part `part` (0-based) of `n_parts`, a contiguous range of
    sentences cut at the extraction's own blocks (`extract.partition_bounds`), into shards
    that hold its rows alone and say which (``part``, ``n_parts``, ``first_row``,
    ``n_rows_total``; meta.json too); `measure_shard` and `build_static_vectors` gather the
    parts' rows. With float16 overflowing under ``auto``, only that part is stored float32.

    writer_for: makes the writer the blocks go to instead of shards at `shard_paths`
    (`stream_model` passes a streaming accumulator's).
    """
    import torch
    import transformers

    torch.set_num_threads(max(1, threads))
    spec = ModelSpec.from_config(name, settings)
    index_summary = read_json(index_summary_path)
    sentences = read_parquet(sentences_path)["text"].tolist()
    if corpus_checksum(sentences) != index_summary["corpus_checksum"]:
        raise InputDataError(
            f"{sentences_path} is not the sentence table that {index_summary_path} was built "
            "from; rebuild the occurrence index"
        )
    layers = _checked_layers(spec, shard_paths)
    loaded = load_model(spec, _device(spec.device))
    block_words = block_words_of(loaded, layers)
    units = _units_matching_index(
        loaded, sentences, occurrences_path, index_summary_path, part, n_parts, block_words
    )
    attributes = provenance_record(
        model=name,
        model_id=spec.source,
        model_revision=loaded.revision,
        n_layers=loaded.n_layers,
        pooling=spec.pooling,
        corpus_checksum=index_summary["corpus_checksum"],
        index_checksum=index_summary["index_checksum"],
        config_hash=config_hash(spec.settings()),
        settings=spec.settings(),
        layer_conventions=loaded.layer_conventions(),
        model_file_checksums=loaded.file_checksums,
        transformers_version=transformers.__version__,
        torch_version=torch.__version__,
    )
    report = _extract_with_storage_fallback(
        loaded, units, layers, shard_paths, attributes, progress, part, n_parts, writer_for
    )
    meta = {
        **attributes,
        "layers": list(layers),
        "hidden_size": loaded.hidden_size,
        "max_length": loaded.max_length,
        **report.as_dict(),
    }
    write_json(meta_path, meta)
    return meta


def stream_model(
    name: str,
    settings: dict[str, Any],
    sentences_path: PathLike,
    occurrences_path: PathLike,
    vocab_path: PathLike,
    index_summary_path: PathLike,
    state_paths: dict[int, PathLike],
    meta_path: PathLike,
    measure_settings: dict[str, Any] | None = None,
    word_sample_size: int = 1000,
    threads: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """`extract_model` without shards: the same forward pass feeds a
    `streaming.StreamingAccumulator`, which writes one state file per layer at
    `state_paths` (`measure_state_file` and `build_static_vectors_from_state` read them).

    measure_settings: config ``measures`` (its seed, baseline sample size and replicates fix
    the MEV baseline's samples); word_sample_size: occurrences kept per indexed word for
    MEV and the static vectors. Blocks are stored as the model's ``storage_dtype`` says
    (float16 by default) before they are summed, so the measures equal those of shards.
    """
    from contextuality.streaming import StreamingAccumulator, StreamingSettings

    occurrences = read_parquet(occurrences_path)
    vocab = read_parquet(vocab_path)
    copies = read_parquet(sentences_path)["n_copies"].to_numpy()
    stream_settings = StreamingSettings.from_measures(
        MeasureSettings(**(measure_settings or {})), word_sample_size
    )
    paths = dict(sorted(state_paths.items()))  # the extraction's layer order

    def accumulator(attributes: dict[str, Any], hidden_size: int) -> StreamingAccumulator:
        return StreamingAccumulator(
            paths,
            occurrences["word_id"].to_numpy(),
            occurrences["sentence_id"].to_numpy(),
            hidden_size,
            attributes,
            stream_settings,
            indexed=vocab.sort_values("word_id")["indexed"].to_numpy(),
            sentence_copies=copies,
            threads=threads,
        )

    meta = extract_model(
        name,
        settings,
        sentences_path,
        occurrences_path,
        index_summary_path,
        paths,
        meta_path,
        threads=threads,
        progress=progress,
        writer_for=accumulator,
    )
    return meta


def measure_state_file(
    state_path: PathLike,
    occurrences_path: PathLike,
    vocab_path: PathLike,
    index_summary_path: PathLike,
    settings: dict[str, Any],
    words_path: PathLike,
    sentence_measures_path: PathLike,
    summary_path: PathLike,
    model_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`measure_shard` for a layer streamed by `stream_model` (transform ``none`` only: a
    correction is fitted on vectors a stream no longer has): the same tables and summary,
    less the measures a stream cannot give, which the summary's ``streaming`` names."""
    from contextuality.streaming import load_state, measure_state

    index_summary = read_json(index_summary_path)
    occurrences = read_parquet(occurrences_path)
    expected = _expected_extraction(model_settings)
    state = load_state(state_path, index_summary["index_checksum"], len(occurrences), expected)
    result = measure_state(
        state, occurrences, read_parquet(vocab_path), MeasureSettings(**settings)
    )
    attributes = state.attributes
    layer, n_layers = int(attributes["layer"]), int(attributes["n_layers"])
    provenance = provenance_record(
        step="measures",
        **{key: attributes[key] for key in ("model", "model_id", "model_revision", "pooling")},
        layer=layer,
        n_layers=n_layers,
        layer_output=layer_output(layer, n_layers, attributes["layer_conventions"]),
        transform="none",
        corpus_checksum=attributes["corpus_checksum"],
        index_checksum=attributes["index_checksum"],
        shard_config_hash=attributes["config_hash"],
        config_hash=config_hash(settings),
        correction=None,
        streamed=attributes["streaming"],
    )
    write_parquet(result.words, words_path, provenance)
    write_parquet(result.sentences, sentence_measures_path, provenance)
    summary = {**provenance, **result.summary}
    write_json(summary_path, summary)
    return summary


def build_static_vectors_from_state(
    state_path: PathLike,
    occurrences_path: PathLike,
    vocab_path: PathLike,
    index_summary_path: PathLike,
    method: str,
    output: PathLike,
) -> None:
    """`build_static_vectors` for a streamed layer: ``pc1`` from each word's sampled
    occurrences, ``mean`` exact (`streaming.static_vectors_from_state`)."""
    from contextuality.streaming import load_state, static_vectors_from_state

    index_summary = read_json(index_summary_path)
    occurrences = read_parquet(occurrences_path)
    state = load_state(state_path, index_summary["index_checksum"], len(occurrences))
    words, matrix = static_vectors_from_state(state, occurrences, read_parquet(vocab_path), method)
    attributes = state.attributes
    provenance = provenance_record(
        step="static_vectors",
        **{key: attributes[key] for key in ("model", "model_id", "pooling", "index_checksum")},
        layer=int(attributes["layer"]),
        method=method,
        transform="none",
        correction=None,
        shard_config_hash=attributes["config_hash"],
        streamed=attributes["streaming"],
    )
    write_word2vec_text(output, words, matrix, provenance)


def write_correction_split(
    sentences_path: PathLike, fit_fraction: float, seed: int, output: PathLike
) -> pd.DataFrame:
    """The sentences every correction is fitted on: a table of sentence_id and ``fit``
    (True: held out for fitting, never measured under a correction), seeded."""
    texts = read_parquet(sentences_path)["text"].tolist()
    fit = split_sentences(len(texts), fit_fraction, seed)
    split = pd.DataFrame({"sentence_id": range(len(texts)), "fit": fit})
    provenance = provenance_record(
        step="correction_split",
        fit_fraction=fit_fraction,
        seed=seed,
        n_fit_sentences=int(fit.sum()),
        corpus_checksum=corpus_checksum(texts),
    )
    write_parquet(split, output, provenance)
    return split


def _load_layer(
    shard_path: PathLike | Sequence[PathLike],
    index_summary: dict[str, Any],
    occurrences: pd.DataFrame,
    transform: str,
    split_path: PathLike | None,
    correction: dict[str, Any] | None,
    expected: dict[str, Any] | None = None,
    dtype: str | None = None,
) -> tuple[np.ndarray, pd.DataFrame, dict[str, Any], dict[str, Any] | None]:
    """A layer's vectors as measured under `transform`, with the occurrences they are, the
    shard's attributes and a record of the correction's fit (None for ``none``).

    ``none``: every occurrence, as `dtype` (None: as stored). Otherwise the correction is
    fitted on the split's held-out sentences (`write_correction_split`,
    `transforms.fit_transform`) and the other sentences' rows are read and corrected a
    slice at a time into float32 (NaN where no vector), so the raw layer is never held
    whole beside the corrected one.
    """
    load = functools.partial(
        load_shards,
        shard_path,
        index_summary["index_checksum"],
        n_rows=len(occurrences),
        expected=expected,
    )
    if transform == "none":
        vectors, attributes = load(dtype=dtype)
        return vectors, occurrences, attributes, None
    if split_path is None or not correction:
        raise ValueError(f"transform '{transform}' needs the correction split and settings")
    split = read_parquet(split_path)
    split_provenance = read_provenance(split_path)
    if split_provenance["corpus_checksum"] != index_summary["corpus_checksum"]:
        raise InputDataError(f"{split_path} was drawn for another corpus; rebuild it")
    in_fit = split["fit"].to_numpy()[occurrences["sentence_id"].to_numpy()]
    fitting, _ = load(dtype=None, rows=np.flatnonzero(in_fit))
    settings = TransformSettings(**correction)
    fitted = fit_transform(transform, fitting[rows_with_vectors(fitting)], settings)
    del fitting
    measured = np.flatnonzero(~in_fit)
    correct = (fitted.apply_to_occurrences, fitted.matrix.shape[1])
    vectors, attributes = load(dtype="float32", rows=measured, convert=correct)
    record = {
        **fitted.describe(),
        "fit_fraction": split_provenance["fit_fraction"],
        "seed": split_provenance["seed"],
        "n_fit_sentences": split_provenance["n_fit_sentences"],
        "split_sha256": sha256_file(split_path),
    }
    return vectors, occurrences.iloc[measured].reset_index(drop=True), attributes, record


@dataclasses.dataclass(frozen=True)
class DegenerationOutputs:
    """Where a measure job writes its layer's degeneration analysis, and its settings
    (config section ``degeneration``; the seed is the measures' seed)."""

    settings: dict[str, Any]
    words_path: PathLike
    bins_path: PathLike
    cone_path: PathLike


def _write_degeneration(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    outputs: DegenerationOutputs,
    seed: int,
    provenance: dict[str, Any],
) -> dict[str, dict[str, float]]:
    """Degeneration by frequency of one layer: per-word table, table by frequency bin and
    the cone sample, written; returns the frequency correlations as summary measures."""
    values = {**outputs.settings, "seed": seed}
    values["rank_edges"] = tuple(values.get("rank_edges", BERT_FLOW_RANK_EDGES))
    settings = DegenerationSettings(**values)
    words = word_degeneration(vectors, occurrences, vocab, settings)
    queries = occurrence_degeneration(vectors, occurrences, vocab, settings)
    bins = degeneration_table(words, queries, rank_bins(len(vocab), settings))
    labels = {key: provenance[key] for key in ("model", "transform", "layer")}
    provenance = {**provenance, "degeneration": dataclasses.asdict(settings)}
    write_parquet(words.assign(**labels), outputs.words_path, provenance)
    write_parquet(bins.assign(**labels), outputs.bins_path, provenance)
    cone = cone_projection(vectors, occurrences, vocab, settings)
    write_parquet(cone.assign(**labels), outputs.cone_path, provenance)
    return {
        name: {"raw": value, "n": len(words)}
        for name, value in frequency_correlations(words).items()
    }


def _expected_extraction(model_settings: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a shard or state file of a model with `model_settings` (its config section,
    defaults filled in) records, for refusing one extracted with other settings."""
    if model_settings is None:
        return None
    return {
        "model_id": model_settings["source"],
        "pooling": model_settings["pooling"],
        "config_hash": config_hash(model_settings),
    }


def measure_shard(
    shard_path: PathLike | Sequence[PathLike],
    sentences_path: PathLike,
    occurrences_path: PathLike,
    vocab_path: PathLike,
    index_summary_path: PathLike,
    settings: dict[str, Any],
    words_path: PathLike,
    sentence_measures_path: PathLike,
    summary_path: PathLike,
    transform: str = "none",
    model_settings: dict[str, Any] | None = None,
    split_path: PathLike | None = None,
    correction: dict[str, Any] | None = None,
    degeneration: DegenerationOutputs | None = None,
) -> dict[str, Any]:
    """All measures of one shard under one transform: per-word and per-sentence tables, a
    JSON summary and (with `degeneration`) the layer's degeneration analysis.

    shard_path: the layer's shard, or the shards of its parts in order (a partitioned
    extraction, gathered by `shards.load_shard_parts` into the same rows).
    sentences_path: the sentence table, whose ``n_copies`` the paper's estimators use.
    With `model_settings` (the model's config section, defaults filled in) a shard
    extracted with other settings is refused rather than measured. A transform other than
    ``none`` is fitted on the held-out sentences of `split_path` (`write_correction_split`)
    with `correction` (``measures.correction`` and the seed) and measured on the others.
    """
    index_summary = read_json(index_summary_path)
    sentence_table = read_parquet(sentences_path)
    if corpus_checksum(sentence_table["text"].tolist()) != index_summary["corpus_checksum"]:
        raise InputDataError(
            f"{sentences_path} is not the sentence table that {index_summary_path} was built "
            "from; rebuild the occurrence index"
        )
    occurrences = read_parquet(occurrences_path)
    vocab = read_parquet(vocab_path)
    expected = _expected_extraction(model_settings)
    # Held as stored (float16: half a float32 copy); every pass converts a chunk at a time.
    vectors, occurrences, attributes, fit = _load_layer(
        shard_path, index_summary, occurrences, transform, split_path, correction, expected
    )
    measure_settings = MeasureSettings(**settings)
    copies = sentence_table["n_copies"].to_numpy()
    provenance = provenance_record(
        step="measures",
        model=attributes["model"],
        model_id=attributes["model_id"],
        model_revision=attributes["model_revision"],
        layer=int(attributes["layer"]),
        n_layers=int(attributes["n_layers"]),
        layer_output=layer_output(
            int(attributes["layer"]), int(attributes["n_layers"]), attributes["layer_conventions"]
        ),
        pooling=attributes["pooling"],
        transform=transform,
        corpus_checksum=attributes["corpus_checksum"],
        index_checksum=attributes["index_checksum"],
        shard_config_hash=attributes["config_hash"],
        config_hash=config_hash(settings),
        correction=fit,
    )
    correlations = {}
    if degeneration is not None:
        correlations = _write_degeneration(
            vectors, occurrences, vocab, degeneration, measure_settings.seed, provenance
        )
    # Last, as it drops the rows without a vector in place (the layer is held once).
    result = measure_layer(vectors, occurrences, vocab, measure_settings, copies, overwrite=True)
    result.summary["measures"].update(correlations)
    write_parquet(result.words, words_path, provenance)
    write_parquet(result.sentences, sentence_measures_path, provenance)
    summary = {**provenance, **result.summary}
    write_json(summary_path, summary)
    return summary


SUMMARY_COLUMNS = (
    "model",
    "transform",
    "layer",
    "n_layers",
    "relative_layer",
    "layer_output",
    "measure",
    "raw",
    "raw_low",
    "raw_high",
    "baseline",
    "baseline_low",
    "baseline_high",
    "adjusted",
    "adjusted_low",
    "adjusted_high",
    "n",
    "dimensions",
)


def summary_rows(summary_paths: Sequence[PathLike]) -> pd.DataFrame:
    """The layer summaries as rows of the summary table (see `summarize`)."""
    rows = []
    for path in summary_paths:
        summary = read_json(path)
        for measure, values in summary["measures"].items():
            rows.append(
                {
                    "model": summary["model"],
                    "transform": summary["transform"],
                    "layer": summary["layer"],
                    "n_layers": summary["n_layers"],
                    "relative_layer": summary["layer"] / summary["n_layers"],
                    "layer_output": summary["layer_output"],
                    "measure": measure,
                    **values,
                }
            )
    table = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return table.sort_values(["model", "transform", "measure", "layer"])


def _layer_summary_provenance(path: PathLike) -> dict[str, Any]:
    """A layer summary's provenance: the summary without its measures."""
    return {key: value for key, value in read_json(path).items() if key != "measures"}


def summarize(summary_paths: Sequence[PathLike], output: PathLike) -> pd.DataFrame:
    """One long table of every (model, transform, layer, measure) from the layer summaries.

    Columns: model, transform, layer, n_layers, relative_layer (layer / n_layers),
    layer_output (what the hidden state is: the embedding output, a block's output, the last
    block's before or after the final normalization), measure,
    raw, baseline and adjusted values each with their interval (``*_low``, ``*_high``;
    empty where a measure has none), and n. Its provenance gathers every layer summary's.
    """
    table = summary_rows(summary_paths)
    sources = [_layer_summary_provenance(path) for path in summary_paths]
    write_tsv(table, output, provenance_record(step="measures_table", sources=sources))
    return table


def draw_figure(
    table_path: PathLike,
    name: str,
    outputs: Sequence[PathLike],
    transform: str = "none",
    relative_layers: bool = False,
) -> None:
    """Figure `name` (a key of `contextuality.figures.FIGURES`) from the summary table."""
    from contextuality.figures import FIGURES, plot_figure

    table = pd.read_csv(table_path, sep="\t")
    plot_figure(
        table,
        FIGURES[name],
        list(outputs),
        transform=transform,
        relative_layers=relative_layers,
        source=f"{Path(table_path).name} sha256 {sha256_file(table_path)}",
    )


def draw_figures(
    table_path: PathLike,
    outputs: Sequence[PathLike],
    transform: str = "none",
    relative_layers: bool = False,
) -> None:
    """Every figure named by an output's file name (a key of
    `contextuality.figures.FIGURES`, one file per format) from the summary table: one job
    draws them all, as they share their input and their imports."""
    by_name: dict[str, list[PathLike]] = {}
    for path in outputs:
        by_name.setdefault(Path(path).stem, []).append(path)
    for name, paths in by_name.items():
        draw_figure(table_path, name, paths, transform, relative_layers)


def draw_transforms_figure(
    table_path: PathLike, outputs: Sequence[PathLike], relative_layers: bool = False
) -> None:
    """Adjusted SelfSim and the cosine baseline by layer under each measured transform."""
    from contextuality.figures import plot_transforms

    table = pd.read_csv(table_path, sep="\t")
    plot_transforms(
        table,
        list(outputs),
        relative_layers=relative_layers,
        source=f"{Path(table_path).name} sha256 {sha256_file(table_path)}",
    )


def degeneration_summary(bins_paths: Sequence[PathLike], output: PathLike) -> pd.DataFrame:
    """Every layer's degeneration by frequency bin (`degeneration.degeneration_table` rows
    labelled by model, transform and layer) in one table."""
    parts = [read_parquet(path) for path in bins_paths]
    table = pd.concat(parts, ignore_index=True)
    leading = ["model", "transform", "layer"]
    table = table[leading + [column for column in table.columns if column not in leading]]
    sources = [read_provenance(path) for path in bins_paths]
    write_tsv(table, output, provenance_record(step="degeneration_table", sources=sources))
    return table


def draw_degeneration_figures(
    words_paths: Sequence[PathLike],
    bins_paths: Sequence[PathLike],
    cone_paths: Sequence[PathLike],
    outputs: Sequence[PathLike],
    title: str,
) -> None:
    """The degeneration figures of one model and transform (`DEGENERATION_FIGURES`, in that
    order, each as .png then .pdf, in `outputs` ordered as the rule's ``expand`` gives)."""
    from contextuality.degeneration_figures import plot_cone, plot_knn_by_bin, plot_norm_by_rank

    def by_layer(paths: Sequence[PathLike]) -> dict[int, pd.DataFrame]:
        frames = [read_parquet(path) for path in paths]
        return {int(frame["layer"].iloc[0]): frame for frame in frames if len(frame)}

    bins = pd.concat([read_parquet(path) for path in bins_paths], ignore_index=True)
    files = {Path(path).name: path for path in outputs}

    def outputs_of(kind: str) -> list[PathLike]:
        return [path for name, path in files.items() if name.split(".")[-2] == kind]

    plot_norm_by_rank(by_layer(words_paths), outputs_of("norm_by_rank"), title=title)
    plot_knn_by_bin(bins, outputs_of("knn_by_bin"), title=title)
    plot_cone(by_layer(cone_paths), outputs_of("cone"), title=title)


def word_extremes(words_paths: Sequence[PathLike], output: PathLike, top: int = 20) -> pd.DataFrame:
    """Table of each layer's most and least context-specific words for one model.

    words_paths: the per-word tables (``layer_<L>.parquet``) of the model's layers.
    """
    layer_words, sources = {}, []
    for path in words_paths:
        sources.append(read_provenance(path))
        layer_words[int(sources[-1]["layer"])] = read_parquet(path)
    table = context_specific_words(layer_words, top)
    provenance = provenance_record(step="context_specific_words", top=top, sources=sources)
    write_tsv(table, output, provenance)
    return table


def fetch_elmo(
    release: str,
    options_path: PathLike,
    weights_path: PathLike,
    provenance_path: PathLike,
    mirror: PathLike | None,
    checksums: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Put a published ELMo release's options and weights in place (from `mirror` or its
    URL), checked against `checksums` where given and against the options' layout, and
    record where they came from and their SHA-256 digests."""
    from contextuality.elmo import RELEASE_FILES, RELEASES, fetch_release

    digests = fetch_release(
        release, {"options.json": options_path, "weights.hdf5": weights_path}, mirror, checksums
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
    write_json(provenance_path, record)
    return record


def fetch_reference(relative: str, destination: PathLike, mirror: PathLike | None) -> None:
    """Put one published file of the paper (``<model>/<file>``) at `destination`."""
    from contextuality import reference

    reference.fetch_published(relative, destination, mirror)


def compare_with_reference(
    published_files: Sequence[PathLike],
    summary_paths: Sequence[PathLike],
    words_paths: Sequence[PathLike],
    output: PathLike,
    figure_outputs: Sequence[PathLike],
) -> pd.DataFrame:
    """Our run of one of the paper's models beside the published results (table and figure).

    published_files: the model's three published files (one directory).
    summary_paths, words_paths: our layer summaries and per-word tables (transform none).
    """
    from contextuality import reference
    from contextuality.figures import plot_reference

    words = {int(read_provenance(path)["layer"]): read_parquet(path) for path in words_paths}
    summary = summary_rows(summary_paths)
    comparison = reference.compare(Path(published_files[0]).parent, summary, words)
    provenance = provenance_record(
        step="reference",
        published_commit=reference.COMMIT,
        published_checksums={Path(path).name: sha256_file(path) for path in published_files},
        sources=[_layer_summary_provenance(path) for path in summary_paths],
    )
    write_tsv(comparison, output, provenance)
    model = summary["model"].iloc[0] if len(summary) else ""
    plot_reference(comparison, model, list(figure_outputs))
    return comparison


def build_static_vectors(
    shard_path: PathLike | Sequence[PathLike],
    occurrences_path: PathLike,
    vocab_path: PathLike,
    index_summary_path: PathLike,
    method: str,
    output: PathLike,
    transform: str = "none",
    split_path: PathLike | None = None,
    correction: dict[str, Any] | None = None,
) -> None:
    """Static vectors (``pc1`` or ``mean``) of the indexed words of one shard, as word2vec
    text; under a transform other than ``none``, from the corrected occurrences of the
    sentences its correction was not fitted on (see `measure_shard`). shard_path: the
    layer's shard, or its parts' shards in order."""
    index_summary = read_json(index_summary_path)
    occurrences = read_parquet(occurrences_path)
    vectors, occurrences, attributes, fit = _load_layer(
        shard_path, index_summary, occurrences, transform, split_path, correction, dtype="float32"
    )
    words, matrix = static_vectors(vectors, occurrences, read_parquet(vocab_path), method)
    provenance = provenance_record(
        step="static_vectors",
        model=attributes["model"],
        model_id=attributes["model_id"],
        layer=int(attributes["layer"]),
        method=method,
        transform=transform,
        correction=fit,
        pooling=attributes["pooling"],
        index_checksum=attributes["index_checksum"],
        shard_config_hash=attributes["config_hash"],
    )
    write_word2vec_text(output, words, matrix, provenance)


def fetch_benchmarks(
    destinations: Sequence[PathLike], data_root: PathLike, mirror: PathLike | None
) -> None:
    """Put word-benchmark files at `destinations` (paths under `data_root`), verified."""
    from contextuality import benchmarks

    for destination in destinations:
        relative = Path(destination).relative_to(data_root).as_posix()
        benchmarks.fetch_benchmark_file(relative, destination, mirror)


def shared_vocabulary(vocab_path: PathLike) -> set[str]:
    """The paper protocol's common vocabulary: the lowercased indexed words of a word index
    (the paper used its ELMo index: spaCy words, punctuation dropped)."""
    vocab = read_parquet(vocab_path)
    return {word.lower() for word in vocab.loc[vocab["indexed"], "word"]}


def score_static_vectors(
    vectors_path: PathLike,
    data_root: PathLike,
    settings: dict[str, Any],
    labels: dict[str, Any],
    output: PathLike,
    vocab_path: PathLike | None = None,
) -> pd.DataFrame:
    """Score one static embedding file on the configured word benchmarks.

    settings: config ``static`` (benchmarks, lowercase, oov). labels: what the vectors are
    (model, method, layer, source, protocol), repeated on every row of the output table.
    Under the ``paper`` protocol the vectors are trimmed to `shared_vocabulary` of the word
    index at `vocab_path`. The table's provenance is written to ``<output>.json``.
    """
    from contextuality import benchmarks

    protocol = labels["protocol"]
    if protocol == "paper" and vocab_path is None:
        raise ValueError("the paper protocol needs the word index's vocabulary (vocab_path)")
    vectors = benchmarks.WordVectors.from_word2vec_text(vectors_path)
    table = benchmarks.score_benchmarks(
        vectors,
        data_root,
        settings["benchmarks"],
        settings["lowercase"],
        settings["oov"],
        protocol=protocol,
        shared_vocabulary=shared_vocabulary(vocab_path) if protocol == "paper" else None,
    )
    for position, (key, value) in enumerate(labels.items()):
        table.insert(position, key, value)
    sidecar = Path(f"{vectors_path}.json")
    files = dict.fromkeys(
        f for name in settings["benchmarks"] for f in benchmarks.BENCHMARKS[name].files
    )
    provenance = provenance_record(
        step="score_static",
        **labels,
        settings=settings,
        vectors=str(vectors_path),
        vectors_sha256=sha256_file(vectors_path),
        vectors_provenance=read_json(sidecar) if sidecar.is_file() else None,
        benchmark_checksums={file: benchmarks.known_checksums()[file] for file in files},
        shared_vocabulary_sha256=sha256_file(vocab_path) if protocol == "paper" else None,
    )
    write_tsv(table, output, provenance)
    return table


def quoted_table1() -> pd.DataFrame:
    """The paper's own Table 1 rows that DESIGN quotes, in the layout of our score tables."""
    text = resources.files("contextuality").joinpath("data/paper_table1.tsv").read_text()
    quoted = pd.read_csv(io.StringIO(text), sep="\t", comment="#", dtype={"layer": "Int64"})
    long = quoted.melt(id_vars=["model", "layer"], var_name="benchmark", value_name="value")
    return long.assign(
        method="pc1", transform="none", source="quoted: Ethayarajh (2019) Table 1", protocol="paper"
    )


def word_benchmarks_table(
    score_paths: Sequence[PathLike], output: PathLike, figure_outputs: Sequence[PathLike]
) -> pd.DataFrame:
    """All static-embedding scores in one table (with the paper's quoted rows), and a heatmap.

    Columns: source, protocol, model, transform, method, layer, benchmark, metric, value,
    coverage, n.
    """
    from contextuality.figures import plot_word_benchmarks

    scores = [pd.read_csv(path, sep="\t", dtype={"layer": "Int64"}) for path in score_paths]
    table = pd.concat([*scores, quoted_table1()], ignore_index=True)
    columns = [
        "source",
        "protocol",
        "model",
        "transform",
        "method",
        "layer",
        "benchmark",
        "metric",
        "value",
        "coverage",
        "n",
    ]
    table = table.reindex(columns=columns)
    sources = [read_tsv_provenance(path) for path in score_paths]
    write_tsv(table, output, provenance_record(step="word_benchmarks_table", sources=sources))
    plot_word_benchmarks(table, list(figure_outputs))
    return table
