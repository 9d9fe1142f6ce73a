"""Checksums, config hashes, provenance records and atomic file writes.

Every output of the workflow carries a provenance record (what produced it, from what
inputs, with which settings) and is written to a temporary name in the same directory
and then renamed, so a crash never leaves a file that looks complete.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import math
import numbers
import os
import platform
import socket
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextuality import __version__
from contextuality.errors import InputDataError, one_line

_partial_counter = itertools.count()
# The checkout the package runs from, where it is installed editable from one.
CHECKOUT = Path(__file__).resolve().parents[3]
# What a checkout's code is: the files whose changes change what a run computes.
CODE_PATHS = ("src", "workflow", "pyproject.toml")
UNCOMMITTED = "+uncommitted"


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


def _git(checkout: Path, *arguments: str) -> str:
    """Git's output in `checkout`; empty where git or the repository is not there."""
    try:
        found = subprocess.run(
            ["git", "-C", str(checkout), *arguments],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return found.stdout.strip()


def source_version(checkout: Path = CHECKOUT) -> str:
    """The code a run of `checkout` computes with: its commit, with `UNCOMMITTED` appended
    where a file of `CODE_PATHS` differs from it (or is not yet in it); empty where the
    package is not run from a git checkout (an installed wheel: its version says it)."""
    if not (checkout / ".git").exists() or not (checkout / "pyproject.toml").is_file():
        return ""
    commit = _git(checkout, "rev-parse", "HEAD")
    if not commit:
        return ""
    changed = _git(checkout, "status", "--porcelain", "--", *CODE_PATHS)
    return commit + (UNCOMMITTED if changed else "")


@functools.cache
def _running_source_version() -> str:
    """`source_version` of the running package's checkout, asked once per process."""
    return source_version()


def provenance_record(**fields: Any) -> dict[str, Any]:
    """Fields every output records, plus the caller's own (model, layer, checksums, ...)."""
    record = {
        "package": "contextuality",
        "package_version": __version__,
        "source_version": _running_source_version(),
        "python": platform.python_version(),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    record.update(fields)
    return record


def partial_path(final: str | os.PathLike) -> Path:
    """A hidden temporary name beside `final` for atomic writes, naming its owner (this
    process and host, see `remove_stale_partials`) and unique to it."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    owner = f"{os.getpid()}-{next(_partial_counter)}@{socket.gethostname()}"
    return final.parent / f".{final.name}.partial-{owner}"


def _owner_is_gone(partial: Path, prefix: str) -> bool:
    """Whether the process that named `partial` (``<prefix><pid>-<n>[@<host>]``) has ended:
    only known on its own host (a name without a host is taken as this host's)."""
    counted, _, host = partial.name[len(prefix) :].partition("@")
    if host and host != socket.gethostname():
        return False
    try:
        pid = int(counted.split("-")[0])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def remove_stale_partials(final: str | os.PathLike) -> list[Path]:
    """Delete the temporary files of `final` whose writer has ended (killed, or a crash),
    keeping those of a writer still running (a second run into the same directory, a job
    beside a ``snakemake --unlock``) or on another host."""
    final = Path(final)
    prefix = f".{final.name}.partial-"
    stale = [path for path in final.parent.glob(f"{prefix}*") if _owner_is_gone(path, prefix)]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `final`; rename it onto `final` only on success.

    Temporary files of `final` that an ended writer left are removed first. On an
    exception the temporary file is removed and `final` is left untouched.
    """
    remove_stale_partials(final)
    temporary = partial_path(final)
    try:
        yield temporary
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def json_ready(value: Any) -> Any:
    """`value` (nested dicts, lists, tuples) with every non-finite number (NaN, ±inf, Python
    or numpy) replaced by None, which JSON writes as null: a bare NaN is not JSON, and
    strict parsers refuse the file. Readers that compute with such values read null back
    as NaN (`summary.measures_table`)."""
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    if isinstance(value, numbers.Real) and not math.isfinite(value):
        return None
    return value


CONTENT_DIGEST = "content_sha256"
REBUILD = "rebuild it (delete it and rerun)"  # what to do with a damaged file


def _json_digest(value: Any) -> str:
    """SHA-256 of `value`'s canonical JSON (`canonical_json`)."""
    return sha256_bytes(canonical_json(value).encode())


def write_json(path: str | os.PathLike, value: dict[str, Any]) -> None:
    """Write a mapping as indented JSON atomically, non-finite numbers as null
    (`json_ready`), with the digest of its content under `CONTENT_DIGEST`, which
    `read_json` checks."""
    if not isinstance(value, dict):
        raise TypeError(f"write_json writes a mapping, not {type(value).__name__}")
    text = json.dumps(json_ready(value), sort_keys=True, default=str, allow_nan=False)
    content = json.loads(text)
    content[CONTENT_DIGEST] = _json_digest(content)
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")


def read_json(path: str | os.PathLike) -> dict[str, Any]:
    """Read a JSON file `write_json` wrote, without its digest (InputDataError, one line
    naming the file, where it is missing, not JSON, or its content differs from its digest)."""
    try:
        content = json.loads(Path(path).read_text())
    except FileNotFoundError as error:
        raise InputDataError(f"{path}: no such file") from error
    except (OSError, ValueError) as error:
        raise InputDataError(f"{path}: not readable JSON ({one_line(error)}); {REBUILD}") from error
    if not isinstance(content, dict) or CONTENT_DIGEST not in content:
        raise InputDataError(
            f"{path}: no {CONTENT_DIGEST}, so not a file this workflow wrote (or damaged); "
            f"{REBUILD}"
        )
    recorded = content.pop(CONTENT_DIGEST)
    if recorded != _json_digest(content):
        raise InputDataError(
            f"{path}: damaged, its content differs from the digest written with it; {REBUILD}"
        )
    return content
