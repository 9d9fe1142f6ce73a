"""Parquet and TSV tables with provenance, written atomically.

A Parquet table keeps its provenance in its schema metadata; a TSV table in a JSON sidecar
beside it (``<name>.provenance.json``), written before the table, so a table never stands
without its provenance.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from contextuality.errors import InputDataError
from contextuality.provenance import (
    atomic_path,
    json_ready,
    provenance_record,
    read_json,
    write_json,
)

PROVENANCE_KEY = b"contextuality.provenance"


def write_parquet(frame: pd.DataFrame, path: str | os.PathLike, provenance: dict[str, Any]) -> None:
    """Write `frame` to Parquet with `provenance` as JSON in the schema metadata."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    metadata = dict(table.schema.metadata or {})
    text = json.dumps(json_ready(provenance), sort_keys=True, default=str, allow_nan=False)
    metadata[PROVENANCE_KEY] = text.encode()
    table = table.replace_schema_metadata(metadata)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)


def read_parquet(path: str | os.PathLike) -> pd.DataFrame:
    """Read a Parquet table written by `write_parquet` (InputDataError naming the file
    where it is missing, truncated or not Parquet)."""
    with _readable(path):
        return pq.read_table(path).to_pandas()


def read_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The provenance record stored in a Parquet file's metadata ({} if none)."""
    with _readable(path):
        metadata = pq.read_schema(path).metadata or {}
    raw = metadata.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}


def gather_parquet(
    paths: Sequence[str | os.PathLike], step: str, order: list[str] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The Parquet tables at `paths` as one table (sorted by the `order` columns), and
    the provenance record of the `step` gathering them, which keeps each one's."""
    table = pd.concat([read_parquet(path) for path in paths], ignore_index=True)
    if order:
        table = table.sort_values(order, kind="stable")
    sources = [read_provenance(path) for path in paths]
    return table, provenance_record(step=step, sources=sources)


@contextlib.contextmanager
def _readable(path: str | os.PathLike) -> Iterator[None]:
    """Turn a missing, truncated or malformed Parquet file into one InputDataError line."""
    try:
        yield
    except FileNotFoundError as error:
        raise InputDataError(f"{path}: no such file") from error
    except (OSError, pa.ArrowException) as error:
        raise InputDataError(
            f"{path}: not a readable Parquet table ({error}); rebuild it (delete it and rerun)"
        ) from error


def tsv_provenance_path(path: str | os.PathLike) -> Path:
    """The provenance sidecar of a TSV table: ``x.tsv`` → ``x.provenance.json``."""
    return Path(path).with_suffix(".provenance.json")


def write_tsv(frame: pd.DataFrame, path: str | os.PathLike, provenance: dict[str, Any]) -> None:
    """Write a tab-separated table atomically, its provenance first (`tsv_provenance_path`)."""
    write_json(tsv_provenance_path(path), provenance)
    with atomic_path(path) as temporary:
        frame.to_csv(temporary, sep="\t", index=False, float_format="%.10g")


def read_tsv_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The provenance record of a TSV table written by `write_tsv`."""
    return read_json(tsv_provenance_path(path))
