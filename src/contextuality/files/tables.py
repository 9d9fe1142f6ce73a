"""Parquet and TSV tables with provenance and a digest of their content, written atomically.

A Parquet table keeps its provenance in its schema metadata; a TSV table in a JSON sidecar
beside it (``<name>.provenance.json``), written before the table, so a table never stands
without its provenance. Each records a SHA-256 digest of what a reader gets back (a
Parquet table's columns and metadata, a TSV table's bytes), and every read compares it:
one bit changed on disk is a damaged table, named in one line, never other numbers read
without complaint. Parquet pages also carry CRC checksums, verified as they are read.
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

from contextuality.errors import InputDataError, one_line
from contextuality.files.provenance import (
    REBUILD,
    atomic_path,
    json_ready,
    provenance_record,
    read_json,
    sha256_bytes,
    sha256_file,
    write_json,
)

PROVENANCE_KEY = b"contextuality.files.provenance"
DIGEST_KEY = b"contextuality.content_sha256"
TABLE_DIGEST = "table_sha256"


def _table_digest(table: pa.Table) -> str:
    """SHA-256 of a table's columns, types, values and schema metadata (but its own
    digest), as Arrow's stream format lays them out."""
    metadata = {k: v for k, v in (table.schema.metadata or {}).items() if k != DIGEST_KEY}
    table = table.replace_schema_metadata(metadata).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sha256_bytes(memoryview(sink.getvalue()))


def _as_read_back(table: pa.Table) -> pa.Table:
    """`table` as Parquet gives it back (a null's unused value slot zeroed, dictionary
    types as stored): what `_table_digest` is taken of at write and at read."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return pq.read_table(pa.BufferReader(sink.getvalue()))


def write_parquet(frame: pd.DataFrame, path: str | os.PathLike, provenance: dict[str, Any]) -> None:
    """Write `frame` to Parquet with `provenance` as JSON in the schema metadata, the
    digest of its content beside it (`DIGEST_KEY`) and a checksum on every page."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    metadata = dict(table.schema.metadata or {})
    text = json.dumps(json_ready(provenance), sort_keys=True, default=str, allow_nan=False)
    metadata[PROVENANCE_KEY] = text.encode()
    table = table.replace_schema_metadata(metadata)
    metadata[DIGEST_KEY] = _table_digest(_as_read_back(table)).encode()
    with atomic_path(path) as temporary:
        pq.write_table(table.replace_schema_metadata(metadata), temporary, write_page_checksum=True)


def _read_checked(path: str | os.PathLike) -> pa.Table:
    """The table at `path`, refused (InputDataError, one line naming it) where it is
    missing, not Parquet, fails a page checksum or differs from its recorded digest."""
    with _readable(path):
        table = pq.read_table(path, page_checksum_verification=True)
        actual = _table_digest(table)
    recorded = (table.schema.metadata or {}).get(DIGEST_KEY)
    if recorded is None:
        raise InputDataError(
            f"{path}: no content digest, so not a table this workflow wrote (or its footer "
            f"is damaged); {REBUILD}"
        )
    if recorded.decode(errors="replace") != actual:
        raise InputDataError(
            f"{path}: damaged, its content differs from the digest written with it; {REBUILD}"
        )
    return table


def read_parquet(path: str | os.PathLike) -> pd.DataFrame:
    """Read a Parquet table written by `write_parquet`, its content checked (`_read_checked`)."""
    return _read_checked(path).to_pandas()


def read_parquet_with_provenance(path: str | os.PathLike) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A Parquet table written by `write_parquet` and its provenance record, from one
    checked read (`_read_checked`)."""
    table = _read_checked(path)
    return table.to_pandas(), _provenance_of(table)


def read_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The provenance record stored in a Parquet file's metadata ({} if none), the file's
    content checked first (`_read_checked`)."""
    return _provenance_of(_read_checked(path))


def read_footer_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The provenance record of a Parquet file from its footer alone ({} if none), its
    content unchecked: for a look while the workflow plans, with no table read."""
    return _provenance_in(pq.read_schema(path).metadata)


def _provenance_of(table: pa.Table) -> dict[str, Any]:
    """The provenance record in a table's schema metadata ({} if none)."""
    return _provenance_in(table.schema.metadata)


def _provenance_in(metadata: dict[bytes, bytes] | None) -> dict[str, Any]:
    """The provenance record in Parquet schema `metadata` ({} if none)."""
    raw = (metadata or {}).get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}


def gather_parquet(
    paths: Sequence[str | os.PathLike], step: str, order: list[str] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The Parquet tables at `paths` as one table (sorted by the `order` columns), and
    the provenance record of the `step` gathering them, which keeps each one's."""
    tables, sources = zip(*(read_parquet_with_provenance(path) for path in paths), strict=True)
    table = pd.concat(tables, ignore_index=True)
    if order:
        table = table.sort_values(order, kind="stable")
    return table, provenance_record(step=step, sources=list(sources))


@contextlib.contextmanager
def _readable(path: str | os.PathLike) -> Iterator[None]:
    """Turn a missing, truncated or malformed Parquet file into one InputDataError line."""
    try:
        yield
    except FileNotFoundError as error:
        raise InputDataError(f"{path}: no such file") from error
    except MemoryError:
        raise
    except (OSError, ValueError, pa.ArrowException) as error:
        raise InputDataError(
            f"{path}: not a readable Parquet table ({one_line(error)}); {REBUILD}"
        ) from error


def tsv_provenance_path(path: str | os.PathLike) -> Path:
    """The provenance sidecar of a TSV table: ``x.tsv`` → ``x.provenance.json``."""
    return Path(path).with_suffix(".provenance.json")


def write_tsv(frame: pd.DataFrame, path: str | os.PathLike, provenance: dict[str, Any]) -> None:
    """Write a tab-separated table atomically, its provenance first (`tsv_provenance_path`)
    with the SHA-256 of the table's bytes (`TABLE_DIGEST`)."""
    text = frame.to_csv(sep="\t", index=False, float_format="%.10g", lineterminator="\n")
    write_text_with_sidecar(path, text, provenance, tsv_provenance_path(path))


def write_text_with_sidecar(
    path: str | os.PathLike, text: str, provenance: dict[str, Any], sidecar: str | os.PathLike
) -> None:
    """Write `text` to `path` atomically, after `provenance` and the digest of its bytes
    (`TABLE_DIGEST`) to the JSON `sidecar`: a file never stands without both."""
    data = text.encode()
    write_json(sidecar, {**provenance, TABLE_DIGEST: sha256_bytes(data)})
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def check_against_sidecar(path: str | os.PathLike, sidecar: str | os.PathLike) -> dict[str, Any]:
    """The provenance in `sidecar` (`write_text_with_sidecar`), after checking that the
    bytes of `path` are those it records (InputDataError, one line, where not)."""
    if not Path(path).is_file():
        raise InputDataError(f"{path}: no such file")
    if not Path(sidecar).is_file():
        raise InputDataError(
            f"{path}: no {Path(sidecar).name} beside it, so not a file this workflow wrote "
            f"(or its sidecar was lost); {REBUILD}"
        )
    provenance = read_json(sidecar)
    if provenance.get(TABLE_DIGEST) != sha256_file(path):
        raise InputDataError(
            f"{path}: damaged, its bytes differ from the SHA-256 {Path(sidecar).name} records; "
            f"{REBUILD}"
        )
    return provenance


def read_tsv(path: str | os.PathLike, **options: Any) -> pd.DataFrame:
    """A TSV table written by `write_tsv`, its bytes checked against its sidecar first
    (`check_against_sidecar`); `options` go to `pandas.read_csv`."""
    check_against_sidecar(path, tsv_provenance_path(path))
    try:
        return pd.read_csv(path, sep="\t", **options)
    except (ValueError, UnicodeDecodeError) as error:
        message = f"{path}: not a readable TSV table ({one_line(error)}); {REBUILD}"
        raise InputDataError(message) from error


def read_tsv_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The provenance record of a TSV table written by `write_tsv`, its bytes checked."""
    return check_against_sidecar(path, tsv_provenance_path(path))
