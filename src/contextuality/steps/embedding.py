"""The steps of workflow/rules/embedding.smk: one model's token embedding matrices
measured against the corpus's token frequencies (Gao et al. 2019), and every model's
gathered into tables and a figure."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pandas as pd

from contextuality import backends
from contextuality.backends.settings import ModelSettings
from contextuality.errors import InputDataError
from contextuality.extraction.token_counts import token_counts
from contextuality.files.provenance import provenance_record, sha256_file
from contextuality.files.tables import read_parquet_with_provenance, write_parquet, write_tsv
from contextuality.measures.embedding_matrix import MatrixTables, measure_matrices

PathLike = str | os.PathLike

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class MatrixFiles:
    """Where one model's matrices are written, or a table of every model's (Parquet or
    TSV): their rows (``measures``), norms by frequency bin and spectra."""

    measures: PathLike
    norms: PathLike
    spectra: PathLike

    KINDS: ClassVar[tuple[str, ...]] = ("measures", "norms", "spectra")

    def tables(self) -> dict[str, PathLike]:
        """Each file by its kind (`KINDS`, the fields of `MatrixTables`)."""
        return {kind: getattr(self, kind) for kind in self.KINDS}


def embedding_matrix(
    spec: ModelSettings,
    sentence_tables: Sequence[PathLike],
    outputs: MatrixFiles,
    threads: int = 1,
) -> MatrixTables:
    """Model `spec`'s token embedding matrices (`backends.read_token_embeddings`: the
    input one, the output one where it has its own), loaded on the CPU (in float32 unless
    `spec` names another ``weights_dtype``) and measured
    (`embedding_matrix.measure_matrices`) against the counts of its tokens in each sentence
    table of `sentence_tables` (a frequency corpus each, named by its provenance's
    ``corpus``), written to `outputs` with their provenance."""
    import torch

    torch.set_num_threads(max(1, threads))
    name = spec.name
    corpora = [read_parquet_with_provenance(path) for path in sentence_tables]
    loaded = backends.load_model(spec, "cpu")
    embeddings = backends.read_token_embeddings(loaded)
    n_rows = len(embeddings.inputs)
    counts = {
        record["corpus"]: token_counts(loaded.encoder, sentences["text"].tolist(), n_rows)
        for sentences, record in corpora
    }
    if len(counts) < len(corpora):
        raise InputDataError(f"{name}: two frequency corpora share a name: {sorted(counts)}")
    tables = measure_matrices(name, embeddings.inputs, embeddings.outputs, embeddings.tied, counts)
    provenance = provenance_record(
        step="embedding_matrix",
        **backends.model_record(spec, loaded),
        weights_dtype=spec.weights_dtype,
        stored_as=embeddings.stored_as,
        tied=embeddings.tied,
        frequency_corpora={
            record["corpus"]: {
                "sha256": sha256_file(path),
                "tokens": int(counts[record["corpus"]].sum()),
            }
            for path, (_, record) in zip(sentence_tables, corpora, strict=True)
        },
    )
    for kind, path in outputs.tables().items():
        write_parquet(getattr(tables, kind), path, provenance)
    log.info("embedding matrices of %s: %d rows, tied %s", name, n_rows, embeddings.tied)
    return tables


def embedding_matrices(
    inputs: Sequence[MatrixFiles], outputs: MatrixFiles, figures: Sequence[PathLike]
) -> MatrixTables:
    """Every model's matrix files (`inputs`, one per model) gathered into the TSV tables
    `outputs`, each with the provenance of the files it gathers, and the figure
    (`figures.embedding.plot_embedding_matrices`) into each of `figures`."""
    from contextuality.figures.embedding import plot_embedding_matrices

    gathered = {}
    for kind, path in outputs.tables().items():
        read = [read_parquet_with_provenance(files.tables()[kind]) for files in inputs]
        table = pd.concat([frame for frame, _ in read], ignore_index=True)
        sources = [source for _, source in read]
        write_tsv(table, path, provenance_record(step="embedding_matrices", sources=sources))
        gathered[kind] = table
    source = ", ".join(
        f"{Path(path).name} sha256 {sha256_file(path)}" for path in (outputs.spectra, outputs.norms)
    )
    plot_embedding_matrices(gathered["spectra"], gathered["norms"], list(figures), source)
    return MatrixTables(**gathered)
