"""The published ELMo releases: where they are, and where a run keeps them.

A release is named in a model's ``source`` (``elmo-original``, the paper's) and fetched
into ``resources/elmo/<release>/`` (the workflow's download_elmo rule, or ``contextuality
download-elmo``), from a mirror directory holding the published file names or from the
AllenNLP server; a directory holding an options JSON and a weights HDF5 names one too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contextuality.backends.base import model_location
from contextuality.backends.elmo.weights import ElmoOptions, read_weights
from contextuality.backends.settings import ModelSettings
from contextuality.errors import ConfigError, InputDataError, ModelLoadError
from contextuality.files.fetch import fetch_file
from contextuality.files.provenance import sha256_file

BASE_URL = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"


RELEASE_DIRECTORY = "resources/elmo"


RELEASE_FILES = ("options.json", "weights.hdf5")


@dataclass(frozen=True)
class ElmoRelease:
    """One published ELMo: its directory on the AllenNLP server and its file name stem."""

    directory: str
    stem: str
    n_layers: int = 2

    def published_name(self, file: str) -> str:
        """The file's published name (``elmo_2x4096_..._weights.hdf5`` for weights.hdf5)."""
        return f"{self.stem}_{file}"

    def url(self, file: str) -> str:
        return f"{BASE_URL}/{self.directory}/{self.published_name(file)}"


RELEASES = {
    "elmo-original": ElmoRelease(
        "2x4096_512_2048cnn_2xhighway", "elmo_2x4096_512_2048cnn_2xhighway"
    ),
    "elmo-original-5.5b": ElmoRelease(
        "2x4096_512_2048cnn_2xhighway_5.5B", "elmo_2x4096_512_2048cnn_2xhighway_5.5B"
    ),
    "elmo-medium": ElmoRelease("2x2048_256_2048cnn_1xhighway", "elmo_2x2048_256_2048cnn_1xhighway"),
    "elmo-small": ElmoRelease("2x1024_128_2048cnn_1xhighway", "elmo_2x1024_128_2048cnn_1xhighway"),
}


@dataclass(frozen=True)
class ElmoFiles:
    """Where one ELMo's two files are."""

    options: Path
    weights: Path
    release: str | None = None


def elmo_files(spec: ModelSettings) -> ElmoFiles:
    """The options and weights files of an ELMo model.

    A published release name (`RELEASES`): ``resources/elmo/<release>/`` in the working
    directory, where the workflow's download rule and ``contextuality download-elmo`` put
    them. A directory: its ``options.json`` and ``weights.hdf5``, or its one
    ``*options.json`` and one ``*weights.hdf5`` (the published names).
    """
    if spec.source in RELEASES:
        directory = Path(RELEASE_DIRECTORY) / spec.source
        return ElmoFiles(*(directory / file for file in RELEASE_FILES), release=spec.source)
    directory = Path(model_location(spec))
    found = []
    for file, pattern in zip(RELEASE_FILES, ("*options.json", "*weights.hdf5"), strict=True):
        matches = (
            [directory / file] if (directory / file).is_file() else sorted(directory.glob(pattern))
        )
        if len(matches) != 1:
            raise ModelLoadError(
                f"model {spec.name}: {directory} must hold one {file} or one {pattern} "
                f"(found {len(matches)})"
            )
        found.extend(matches)
    return ElmoFiles(*found)


def fetch_release(
    release: str,
    destinations: dict[str, str | Path],
    mirror: str | Path | None,
    expected: dict[str, str] | None = None,
) -> dict[str, str]:
    """Put a published release's two files at `destinations` (keyed by RELEASE_FILES),
    copied from `mirror` (a directory holding the published file names) or downloaded,
    and check that the weights have every dataset the options ask for.

    expected: SHA-256 digests to hold the files to, keyed by published file name.
    Returns the digests of the files written.
    """
    if release not in RELEASES:
        raise ConfigError(f"unknown ELMo release {release!r}; known: {sorted(RELEASES)}")
    published = RELEASES[release]
    expected = expected or {}
    for file in RELEASE_FILES:
        name = published.published_name(file)
        fetch_file(
            destinations[file],
            published.url(file),
            None if mirror is None else Path(mirror) / name,
            "set elmo.mirror to a directory holding the published ELMo files",
            expected.get(name),
        )
    try:
        read_weights(destinations["weights.hdf5"], ElmoOptions.read(destinations["options.json"]))
    except ModelLoadError as error:
        for path in destinations.values():
            Path(path).unlink(missing_ok=True)
        raise InputDataError(f"ELMo release {release}: {error}") from error
    return {
        published.published_name(file): sha256_file(destinations[file]) for file in RELEASE_FILES
    }
