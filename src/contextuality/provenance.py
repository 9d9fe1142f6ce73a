"""Checksums, config hashes, provenance records and atomic file writes.

Every output of the workflow carries a provenance record (what produced it, from what
inputs, with which settings) and is written to a temporary name in the same directory
and then renamed, so a crash never leaves a file that looks complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import platform
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextuality import __version__

_partial_counter = itertools.count()


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of a byte string."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal settings give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(settings: Any) -> str:
    """Short stable hash of a settings mapping (first 16 hex digits of SHA-256)."""
    return sha256_bytes(canonical_json(settings).encode())[:16]


def provenance_record(**fields: Any) -> dict[str, Any]:
    """Fields every output records, plus the caller's own (model, layer, checksums, ...)."""
    record = {
        "package": "contextuality",
        "package_version": __version__,
        "python": platform.python_version(),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    record.update(fields)
    return record


def partial_path(final: str | os.PathLike) -> Path:
    """A hidden temporary name beside `final`, unique to this process, for atomic writes."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    return final.parent / f".{final.name}.partial-{os.getpid()}-{next(_partial_counter)}"


def remove_stale_partials(final: str | os.PathLike) -> list[Path]:
    """Delete temporary files that an interrupted writer of `final` left behind."""
    final = Path(final)
    stale = list(final.parent.glob(f".{final.name}.partial-*"))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `final`; rename it onto `final` only on success.

    On an exception the temporary file is removed and `final` is left untouched.
    """
    temporary = partial_path(final)
    try:
        yield temporary
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json(path: str | os.PathLike, value: Any) -> None:
    """Write indented JSON atomically."""
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text())
