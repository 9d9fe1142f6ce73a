"""Fetching input files: from a local mirror directory, or else from their public URL."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

from contextuality.errors import InputDataError
from contextuality.provenance import atomic_path


def fetch_file(
    destination: str | Path, url: str, mirror_file: str | Path | None, offline_hint: str
) -> None:
    """Copy `mirror_file` (when given) or download `url` to `destination`, atomically.

    A missing mirror file or a failed download is an InputDataError; the download's
    message ends with `offline_hint` (which config key names a mirror).
    """
    if mirror_file is not None:
        source = Path(mirror_file)
        if not source.is_file():
            raise InputDataError(f"{source}: not found in the mirror directory")
        with atomic_path(destination) as temporary:
            shutil.copyfile(source, temporary)
        return
    try:
        with (
            urllib.request.urlopen(url, timeout=120) as response,
            atomic_path(destination) as temporary,
            temporary.open("wb") as target,
        ):
            shutil.copyfileobj(response, target)
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise InputDataError(f"could not download {url} ({error}); {offline_hint}") from error
