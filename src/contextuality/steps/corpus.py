"""The steps of workflow/rules/corpus.smk: STS archives, the sentence table, the distinct
STS 2012–2016 sentences, the occurrence indexes, their table and the correction split."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from contextuality import backends
from contextuality.backends.base import tokenizer_key
from contextuality.backends.settings import ModelSettings
from contextuality.corpus import sentences as corpus_io
from contextuality.corpus.index import (
    IndexFiles,
    IndexSettings,
    OccurrenceIndex,
    build_occurrence_index,
    corpus_checksum,
    index_checksum,
    index_settings_record,
    subword_units,
    word_units,
)
from contextuality.corpus.settings import CorpusSettings
from contextuality.corpus.words import tokenize_sentences
from contextuality.errors import InputDataError, warn
from contextuality.files.fetch import resolve_data_path
from contextuality.files.provenance import (
    config_hash,
    provenance_record,
    read_json,
    sha256_file,
    write_json,
)
from contextuality.files.tables import read_parquet, write_parquet, write_tsv
from contextuality.transforms import fitting

PathLike = str | os.PathLike
log = logging.getLogger(__name__)


def download_sts(year: int, destination: PathLike, mirror: PathLike | None) -> None:
    """Put STS `year`'s archive at `destination`, from the mirror or the network."""
    corpus_io.fetch_sts_archive(year, destination, mirror)


def sentences(
    settings: CorpusSettings, sources: Sequence[PathLike] | None, output: PathLike
) -> None:
    """The sentence table of the configured corpus (its `sources` as
    `sentences.read_corpus` takes them; None: the files a text corpus's settings name).
    With ``max_sentences``, the first that many sentences read, and a WARNING on the
    console saying how many were left out."""
    if sources is None:
        text = settings.text
        sources = corpus_io.text_corpus_files(resolve_data_path(text.path), text.pattern)
    read, checksums = corpus_io.read_corpus(settings, sources)
    limit = settings.max_sentences
    if limit is not None and len(read) > limit:
        warn([f"corpus.max_sentences: kept the first {limit} of {len(read)} sentences read"])
        read = read[:limit]
    table = corpus_io.build_sentence_table(read)
    provenance = provenance_record(
        step="sentences",
        corpus=settings.name,
        input_checksums=checksums,
        corpus_checksum=corpus_checksum(table["text"].tolist()),
        config_hash=config_hash(settings.as_config()),
        n_sentences=len(table),
    )
    write_parquet(table, output, provenance)
    log.info("%d unique sentences from %d read", len(table), len(read))


def _write_index(
    index: OccurrenceIndex,
    texts: list[str],
    units: dict[str, Any],
    settings: IndexSettings,
    output: IndexFiles,
) -> None:
    """Write an index's occurrences, vocabulary and summary, the summary as provenance;
    refuse (InputDataError) one with nothing to measure before any model runs."""
    _check_measurable(index, len(texts), units["kind"], settings)
    summary = provenance_record(
        step="index",
        units=units,
        corpus_checksum=corpus_checksum(texts),
        index_checksum=index_checksum(index.occurrences),
        config_hash=config_hash(index_settings_record(settings, units)),
        **settings.as_dict(),
        n_sentences=len(texts),
        n_occurrences=len(index.occurrences),
        n_words=len(index.vocab),
        n_indexed_words=int(index.vocab["indexed"].sum()),
    )
    output.write(index, summary)
    log.info(
        "%d occurrences of %d %ss, %d indexed (in at least %d %s)",
        len(index.occurrences),
        len(index.vocab),
        units["kind"],
        summary["n_indexed_words"],
        settings.min_contexts,
        "sentences" if settings.count_by == "contexts" else "occurrences",
    )


def _check_measurable(
    index: OccurrenceIndex, n_sentences: int, kind: str, settings: IndexSettings
) -> None:
    """Refuse an index in which no indexed unit occurs in two sentences or more: SelfSim
    compares a unit's occurrences in different contexts, so nothing could be measured."""
    vocab = index.vocab
    if int((vocab["indexed"] & (vocab["n_contexts"] >= 2)).sum()) > 0:
        return
    where = "sentences" if settings.count_by == "contexts" else "times"
    threshold = f"at least min_contexts={settings.min_contexts} {where}"
    if settings.min_contexts < 2 or settings.count_by != "contexts":
        threshold += " and in 2 sentences or more"
    raise InputDataError(
        f"0 of {len(vocab)} {kind}s in {n_sentences} sentences occur {threshold}: lower "
        "index.min_contexts or use a larger corpus"
    )


def occurrence_index(sentences_path: PathLike, settings: IndexSettings, output: IndexFiles) -> None:
    """The word occurrence index (words by ``settings.tokenizer``), its vocabulary and its
    summary with the index checksums."""
    table = read_parquet(sentences_path)
    texts = table["text"].tolist()
    log.info("splitting %d sentences into words (%s)", len(texts), settings.tokenizer)
    words = tokenize_sentences(texts, settings.tokenizer)
    index = build_occurrence_index(words, settings, table["n_copies"].to_numpy())
    _write_index(index, texts, word_units(settings), settings, output)


def subword_index(
    sentences_path: PathLike,
    spec: ModelSettings,
    settings: IndexSettings,
    output: IndexFiles,
) -> None:
    """The occurrence index whose units are the subwords of model `spec`'s tokenizer (the
    running text's content tokens), for models with ``units: subword``.

    Only the tokenizer is loaded. ``settings.lowercase`` does not apply: a unit must be the
    token the model sees.
    """
    encoder = backends.load_encoder(spec)
    table = read_parquet(sentences_path)
    texts = table["text"].tolist()
    units = encoder.subword_strings(encoder.encode(texts))
    settings = dataclasses.replace(settings, lowercase=False)
    index = build_occurrence_index(units, settings, table["n_copies"].to_numpy())
    _write_index(index, texts, subword_units(tokenizer_key(spec), spec.source), settings, output)


def corpus_table(
    sentences_path: PathLike, summaries: Mapping[str, PathLike], output: PathLike
) -> pd.DataFrame:
    """The corpus a run measured, one row per model (`summaries`: model → the summary of
    the occurrence index its rows align with): the sentences listed (repeats counted, as
    the STS pairs list them) and distinct, and its index's units, occurrences, distinct
    units and units indexed (those measured)."""
    listed = int(read_parquet(sentences_path)["n_copies"].sum())
    records = {model: read_json(path) for model, path in summaries.items()}
    table = pd.DataFrame(
        [
            {
                "model": model,
                "units": record["units"]["kind"],
                "tokenizer": record["units"]["tokenizer"],
                "sentences": listed,
                "distinct_sentences": record["n_sentences"],
                "occurrences": record["n_occurrences"],
                "distinct_units": record["n_words"],
                "indexed_units": record["n_indexed_words"],
                "min_contexts": record["min_contexts"],
                "count_by": record["count_by"],
            }
            for model, record in records.items()
        ]
    )
    write_tsv(table, output, provenance_record(step="corpus_table", sources=list(records.values())))
    return table


def settings_record(stage: str, settings: dict[str, Any], output: PathLike) -> None:
    """The record of a corpus stage's `settings` at `output` (``<stage>-<digest>.json``,
    the digest their hash: see `contextuality.workflow.study_files`), the stage's records
    of other settings beside it removed, so that returning to them rebuilds the stage.
    The same for the checksums of a source's outside files (`workflow.inputs`)."""
    output = Path(output)
    digest = config_hash(settings)
    if output.name != f"{stage}-{digest}.json":
        raise InputDataError(
            f"{output}: not the record of this config's {stage} settings ({stage}-{digest}.json)"
        )
    write_json(
        output,
        provenance_record(
            step="settings_record", stage=stage, settings=settings, config_hash=digest
        ),
    )
    for other in output.parent.glob(f"{stage}-{'?' * len(digest)}.json"):
        if other != output:
            other.unlink(missing_ok=True)
            log.info("removed %s, the record of settings this config no longer has", other)


def fit_split(
    sentences_path: PathLike, fit_fraction: float, seed: int, output: PathLike
) -> pd.DataFrame:
    """The sentences every correction is fitted on: a table of sentence_id and ``fit``
    (True: held out for fitting, never measured under a correction), seeded."""
    texts = read_parquet(sentences_path)["text"].tolist()
    fit = fitting.fit_split(len(texts), fit_fraction, seed)
    split = pd.DataFrame({"sentence_id": range(len(texts)), "fit": fit})
    provenance = provenance_record(
        step="fit_split",
        fit_fraction=fit_fraction,
        seed=seed,
        config_hash=config_hash(fitting.fit_split_settings(fit_fraction, seed)),
        n_fit_sentences=int(fit.sum()),
        corpus_checksum=corpus_checksum(texts),
    )
    write_parquet(split, output, provenance)
    return split


def _read_distinct_sts_sentences(
    archives: Mapping[int, PathLike], verify_checksums: bool
) -> list[str]:
    """The distinct sentences of the STS archives (year → path), normalized as the corpus
    step normalizes them, in archive order: what a training run trains on, and a frequency
    corpus of the token embedding matrices."""
    seen: dict[str, None] = {}
    for year, path in sorted(archives.items()):
        pairs, _ = corpus_io.read_sts_archive(path, year, verify_checksums=verify_checksums)
        for sentence in corpus_io.sts_sentences(pairs):
            seen.setdefault(corpus_io.normalize_sentence(sentence.text), None)
    return [text for text in seen if text]


def distinct_sts_sentences(
    archives: Mapping[int, PathLike], output: PathLike, verify_checksums: bool
) -> pd.DataFrame:
    """`_read_distinct_sts_sentences` written to `output` (column ``text``), its provenance
    naming the corpus (``sts-<first year>-<last year>``) and the archives' checksums."""
    table = pd.DataFrame({"text": _read_distinct_sts_sentences(archives, verify_checksums)})
    years = sorted(archives)
    write_parquet(
        table,
        output,
        provenance_record(
            step="sts_sentences",
            corpus=f"sts-{years[0]}-{years[-1]}",
            archives={str(year): sha256_file(path) for year, path in sorted(archives.items())},
            sentences=len(table),
        ),
    )
    log.info("STS sentences: %s distinct, from %d archives", f"{len(table):,}", len(archives))
    return table
