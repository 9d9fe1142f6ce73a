"""The steps of workflow/rules/reference.smk: the paper's published results, and a run of
one of its models beside them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from contextuality import reference
from contextuality.files.provenance import provenance_record, sha256_file
from contextuality.files.tables import read_parquet_with_provenance, write_tsv
from contextuality.measures import summary

PathLike = str | os.PathLike


def download_reference(relative: str, destination: PathLike, mirror: PathLike | None) -> None:
    """Put one published file of the paper (``<model>/<file>``) at `destination`."""
    reference.fetch_published(relative, destination, mirror)


def compare_reference(
    published_files: Sequence[PathLike],
    summary_paths: Sequence[PathLike],
    words_paths: Sequence[PathLike],
    output: PathLike,
    figure_outputs: Sequence[PathLike],
) -> pd.DataFrame:
    """Our run of one of the paper's models beside the published results
    (`reference.compare`), as a table and a figure.

    published_files: the model's three published files (one directory).
    summary_paths, words_paths: our layer summaries and per-word tables (transform none).
    """
    from contextuality.figures.paper import plot_reference

    words = {
        int(provenance["layer"]): table
        for table, provenance in map(read_parquet_with_provenance, words_paths)
    }
    summaries = summary.read_layer_summaries(summary_paths)
    table = summary.measures_table(summaries)
    comparison = reference.compare(Path(published_files[0]).parent, table, words)
    provenance = provenance_record(
        step="reference",
        published_commit=reference.COMMIT,
        published_checksums={Path(path).name: sha256_file(path) for path in published_files},
        sources=[
            {key: value for key, value in layer.items() if key != "measures"} for layer in summaries
        ],
    )
    write_tsv(comparison, output, provenance)
    model = table["model"].iloc[0] if len(table) else ""
    plot_reference(comparison, model, list(figure_outputs))
    return comparison
