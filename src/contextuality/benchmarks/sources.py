"""Where each benchmark file was published, its checksum, and fetching it (mirror or network)."""

from __future__ import annotations

from pathlib import Path

from contextuality.errors import InputDataError
from contextuality.files.fetch import fetch_file, packaged_checksums

# Where each mirrored file was published: data-root prefix → (repository, commit, path prefix
# in the repository). Files are byte-for-byte copies (see the mirror's SOURCES.md).
_ORIGINS = {
    "wordsim/": (
        "mfaruqui/eval-word-vectors",
        "94b3dd9fdbac7ed08dbee7179cd5ee464acf0594",
        "data/word-sim/",
    ),
    "analogy/questions-words.txt": (
        "tmikolov/word2vec",
        "20c129af10659f7c50e86e3be406df663beff438",
        "questions-words.txt",
    ),
    "analogy/msr.csv": (
        "vecto-ai/word-benchmarks",
        "9b61d0e067e2e68af22160d09450f82d9544cd70",
        "word-analogy/monolingual/en/msr.csv",
    ),
    "categorization/": (
        "vecto-ai/word-benchmarks",
        "9b61d0e067e2e68af22160d09450f82d9544cd70",
        "word-categorization/monolingual/en/",
    ),
    "semeval2012/": (
        "SBelkaid/degrees_of_similarities",
        "f15c3c9f82490537318f0d971a8fa3a397655e7d",
        "",
    ),
}
RAW_URL = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"


def source_url(relative_path: str) -> str:
    """Public raw URL of a mirrored benchmark file (its origin repository at a fixed commit)."""
    for prefix, (repository, commit, upstream) in _ORIGINS.items():
        if relative_path == prefix or (prefix.endswith("/") and relative_path.startswith(prefix)):
            path = upstream + relative_path[len(prefix) :] if prefix.endswith("/") else upstream
            return RAW_URL.format(repository=repository, commit=commit, path=path)
    raise KeyError(f"{relative_path}: no known origin")


def known_checksums() -> dict[str, str]:
    """SHA-256 of every benchmark file, keyed by its path relative to the data root."""
    return packaged_checksums("benchmarks.sha256")


def fetch_benchmark_file(
    relative_path: str, destination: str | Path, mirror: str | Path | None
) -> None:
    """Copy a benchmark file from a mirror directory (laid out like the data root) or
    download it from its origin, verifying its SHA-256; a mismatch leaves no file."""
    expected = known_checksums().get(relative_path)
    if expected is None:
        raise InputDataError(f"{relative_path}: not a known benchmark file")
    fetch_file(
        destination,
        source_url(relative_path),
        None if mirror is None else Path(mirror) / relative_path,
        "with no network, set a mirror directory laid out like the benchmark data root",
        expected_sha256=expected,
    )
