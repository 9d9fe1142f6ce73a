"""Content fingerprints of the files a study reads from outside its own results: an
installed package's corpus, a model directory's weights, a user's embeddings.

The workflow names them by their SHA-256 checksums rather than by their time stamps, so
that a reinstall, a copy or a ``touch`` that leaves the bytes alone reruns nothing. A
checksum is computed once per file version: a cache keyed by the file's resolved path,
size and modification time (nanoseconds) keeps it, so a file is read again only where
one of those changed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path

from contextuality.files.provenance import atomic_path, config_hash, sha256_file

log = logging.getLogger(__name__)

CHECKSUM_CACHE = Path(".snakemake") / "contextuality" / "checksums.json"
# Files this large in all are checksummed with a line on the console before and after.
ANNOUNCED_BYTES = 1 << 30


def _read_cache(cache: Path) -> dict[str, list]:
    """The cache's entries (path → [size, mtime_ns, sha256]); empty where it is missing
    or unreadable (it is rebuilt, never trusted blindly)."""
    try:
        entries = json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def file_checksums(
    files: Mapping[str, Path], cache: Path | None = CHECKSUM_CACHE
) -> dict[str, str]:
    """Each label of `files` → the SHA-256 of its file's bytes, read from `cache` where
    the file's path, size and modification time are those recorded (None: no cache)."""
    entries = {} if cache is None else _read_cache(cache)
    keys = {label: str(Path(path).resolve()) for label, path in files.items()}
    stats = {label: Path(key).stat() for label, key in keys.items()}
    stale = [
        label
        for label, stat in stats.items()
        if entries.get(keys[label], [None, None])[:2] != [stat.st_size, stat.st_mtime_ns]
    ]
    total = sum(stats[label].st_size for label in stale)
    started = time.monotonic()
    if total >= ANNOUNCED_BYTES:
        log.info("checksumming %d files (%.1f GB) from outside results/", len(stale), total / 1e9)
    for label in stale:
        stat = stats[label]
        entries[keys[label]] = [stat.st_size, stat.st_mtime_ns, sha256_file(files[label])]
    if total >= ANNOUNCED_BYTES:
        log.info("checksummed in %.0f s", time.monotonic() - started)
    if stale and cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(cache) as temporary:
            temporary.write_text(json.dumps(entries, sort_keys=True))
    return {label: entries[keys[label]][2] for label in files}


def fingerprint(checksums: Mapping[str, str]) -> str:
    """The digest of a set of labelled checksums (16 hex digits), which names their record:
    equal bytes under equal labels give the same digest, wherever the files lie."""
    return config_hash(dict(checksums))


def relative_labels(files: list[Path], root: Path) -> dict[str, Path]:
    """`files` labelled by their path under `root` (POSIX), or by name where `root` is
    the file itself: labels that do not change when the tree is copied elsewhere."""
    if len(files) == 1 and files[0] == root:
        return {root.name: root}
    return {file.relative_to(root).as_posix(): file for file in files}
